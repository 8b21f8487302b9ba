"""A followed log replaced (new inode) or shrunk below what had been read: record it and start over.

Whether it was is decided by ``orchestrator.monitoring.truncation`` (pure) from evidence that cannot be stale: the
size the host reported against what the follower had read *before* the host was asked. The recovery
resets the run's committed offset and parser state, records a ``log_truncated`` event and follows the
new file from its start. The first inode the host reports is remembered on the run.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.context import Context
from orchestrator.core.notices import LogTruncated, Notice
from orchestrator.monitoring.followers import Followers
from orchestrator.monitoring.truncation import truncation
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries
from orchestrator.store.models import Run
from worker.protocol import RunStatusReport


def restart_if_truncated(ctx: Context, session: HostSession, run: Run, live: RunStatusReport,
                         followers: Followers, read_before: int, notify: Callable[[Notice], None]) -> bool:
    """Whether the log was truncated or replaced (then it is followed again from its start)."""
    size, inode = live.log_size, live.log_inode
    if size is None:
        return False
    found = truncation(size=size, inode=inode, known_inode=run.log_inode, read_before=read_before)
    if run.log_inode is None and inode is not None:
        with ctx.db() as s:
            row = queries.run_row(s, run.id)
            if row is not None:
                row.log_inode = inode
    if found is None:
        return False
    followed = followers.drop(run.id)
    old_offset = followed.log.fed if followed is not None else 0
    with ctx.db() as s:
        row = queries.run_row(s, run.id)
        if row is None:
            return True
        queries.add_event(s, run.id, "log_truncated",
                          {"old_offset": old_offset, "new_size": size, "replaced": found.replaced})
        row.log_offset, row.parser_state, row.log_inode = 0, None, inode
    notify(LogTruncated(run.id, old_offset, size))
    with ctx.db() as s:
        fresh = queries.run_row(s, run.id)
    if fresh is not None:
        followers.follow(session, fresh)
    return True
