"""Where the TUI's log views get their lines: from the run's one follower, never from a tail of their own.

While this app holds the monitor lock the monitor's followers run in-process and announce the lines they
recorded (``LogLinesRead``, split by ``logparse.shown``); the app hands each to ``publish``, which forwards
it to the views subscribed to that run (or to every run) and keeps the latest ones for a view opened
later.  When another process holds the lock (or the history is read-only) a view runs ``read``: the same
follower class, reading only (``LogFollower.reading``), so there is one tail implementation.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable

from textual.message import Message
from textual.message_pump import MessagePump

from orchestrator.core.notices import LogLinesRead, Notice
from orchestrator.errors import EorchError
from orchestrator.monitoring.follower import LogFollower
from orchestrator.remote.hosts import HostSession
from tui.messages import LogFollowFailed, LogLinesReceived

#: Announcements kept for views opened later (one per follower commit, each a few lines to a few thousand).
RECENT = 2000
ALL_RUNS = None
#: Seconds before a failed read is tried again (from the last line read).
RETRY_S = 2.0


class LogFeed:
    def __init__(self, open_session: Callable[[str], Awaitable[HostSession]]) -> None:
        self.open_session = open_session
        #: Whether the in-process monitor follows the active runs (the app sets it from the monitor state).
        self.following = False
        self._subscribers: dict[str | None, list[MessagePump]] = {}
        self._recent: deque[LogLinesRead] = deque(maxlen=RECENT)

    def publish(self, read: LogLinesRead) -> None:
        """Lines a follower of this process recorded: to every view of that run and of all runs."""
        self._recent.append(read)
        for target in (*self._subscribers.get(read.run_id, ()), *self._subscribers.get(ALL_RUNS, ())):
            target.post_message(LogLinesReceived(read.run_id, read.lines, read.offset))

    def subscribe(self, target: MessagePump, run_id: str | None = ALL_RUNS) -> tuple[LogLinesRead, ...]:
        """From now on ``target`` gets ``LogLinesReceived`` for ``run_id`` (None: every run); returns the kept
        announcements of that run (or all), oldest first, for the target to show what came before."""
        self.unsubscribe(target)
        self._subscribers.setdefault(run_id, []).append(target)
        return tuple(r for r in self._recent if run_id is ALL_RUNS or r.run_id == run_id)

    def unsubscribe(self, target: MessagePump) -> None:
        for targets in self._subscribers.values():
            if target in targets:
                targets.remove(target)

    async def read(self, host: str, run_id: str, log_path: str, offset: int, notify: Callable[[Notice], None],
                   *, until: int | None = None, skip_partial: bool = True) -> None:
        """Read the log (from ``offset``, up to ``until`` when given) with a follower that records nothing."""
        session = await self.open_session(host)
        await LogFollower.reading(session, run_id, log_path, offset, notify, until=until,
                                  skip_partial=skip_partial).run()

    async def read_retrying(self, host: str, run_id: str, log_path: str, offset: int,
                            post: Callable[[Message], object], *, until: int | None = None,
                            skip_partial: bool = True) -> None:
        """``read``, each batch of lines posted as ``LogLinesReceived``; a failed read is posted as
        ``LogFollowFailed`` and tried again from the last line read, until the read ends."""
        def announced(notice: Notice) -> None:
            nonlocal offset, skip_partial
            if isinstance(notice, LogLinesRead):
                offset, skip_partial = notice.offset, False
                post(LogLinesReceived(notice.run_id, notice.lines, notice.offset))

        while True:
            try:
                await self.read(host, run_id, log_path, offset, announced, until=until, skip_partial=skip_partial)
                return
            except (EorchError, OSError) as err:
                post(LogFollowFailed(run_id, str(err)))
            await asyncio.sleep(RETRY_S)


def received(reads: Iterable[LogLinesRead]) -> list[LogLinesReceived]:
    """Kept announcements as the messages a view handles."""
    return [LogLinesReceived(r.run_id, r.lines, r.offset) for r in reads]
