"""One host's connection as the watcher sees it: the open session, reachability, and backoff when it drops.

A dropped link marks the host unreachable (recorded once per change, and told to the listeners), never a
run failed; the next attempt waits twice as long as the last, up to ``BACKOFF_MAX_S``. A worker operation that
failed (``RemoteOpFailed``: the agent answered with an error) leaves the host reachable and its session open:
the round is retried after the same backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.context import Context
from orchestrator.core.notices import HostReachabilityChanged, Notice
from orchestrator.errors import HostError, RemoteOpFailed
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries

log = logging.getLogger("eorch.monitor")

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


@dataclass
class Backoff:
    """Delays between reconnection attempts: doubling from ``first_s`` up to ``max_s``, reset on success."""

    first_s: float = BACKOFF_FIRST_S
    max_s: float = BACKOFF_MAX_S
    delay_s: float = BACKOFF_FIRST_S

    def next(self) -> float:
        """The delay before the next attempt (and the one after doubles)."""
        delay, self.delay_s = self.delay_s, min(self.delay_s * 2, self.max_s)
        return delay

    def reset(self) -> None:
        self.delay_s = self.first_s


class HostConnection:
    def __init__(self, ctx: Context, host: str, notify: Callable[[Notice], None],
                 backoff: Backoff | None = None) -> None:
        self.ctx = ctx
        self.host = host
        self.notify = notify
        self.backoff = backoff or Backoff()
        self.reachable: bool | None = None

    async def open(self) -> HostSession:
        """The host's session (connecting if need be); the host is reachable."""
        session = await self.ctx.session(self.host)
        self.set_reachable(True)
        self.backoff.reset()
        return session

    async def lost(self, error: HostError) -> None:
        """The link dropped: close the session, record the host unreachable, wait before the next attempt."""
        await self.ctx.drop_session(self.host)
        self.set_reachable(False, str(error))
        await asyncio.sleep(self.backoff.next())

    async def op_failed(self, error: RemoteOpFailed) -> None:
        """The host answered but its worker failed this round's operation: say so, wait, keep the session."""
        log.error("host %s: %s", self.host, error)
        await asyncio.sleep(self.backoff.next())

    def set_reachable(self, reachable: bool, error: str | None = None) -> None:
        if self.reachable == reachable:
            return
        self.reachable = reachable
        with self.ctx.db() as s:
            queries.set_reachability(s, self.host, reachable, error)
        self.notify(HostReachabilityChanged(self.host, reachable, error))
