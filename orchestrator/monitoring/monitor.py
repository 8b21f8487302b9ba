"""The loop shared by ``eorch watch``, ``eorch daemon`` and the TUI: a host watcher per host with active runs.

The caller holds the monitor lock (``orchestrator.monitoring.lock.follow_or_read``). A watcher that died is
started again on the next loop; one that died because the history cannot be written stops the monitor.
New output wakes its host's watcher for a few fast liveness checks, so a crash (a traceback, then the exit)
is recorded within ~100 ms instead of up to a poll interval later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from orchestrator.context import Context
from orchestrator.core.notices import Notice, RunProgressed
from orchestrator.errors import StoreError
from orchestrator.monitoring.watcher import HostWatcher
from orchestrator.store import queries
from orchestrator.store.db import check_writable, describe_write_failure, is_read_only

log = logging.getLogger("eorch.monitor")

# After output, check liveness every FAST_POLL_S (watcher) for a short while, longer after an error.
WAKE_EVENT_KINDS = frozenset({"error_seen", "traceback_completed", "root_cause_found"})
FAST_POLLS_AFTER_OUTPUT = 6
FAST_POLLS_AFTER_ERROR = 60


class Monitor:
    def __init__(
        self,
        ctx: Context,
        *,
        run_refs: Sequence[str] = (),
        listeners: Sequence[Callable[[Notice], None]] = (),
        poll_interval: float | None = None,
        tickers: Sequence[Callable[[Monitor], None]] = (),
        drain_timeout_s: float | None = None,
    ) -> None:
        self.ctx = ctx
        self.drain_timeout_s = drain_timeout_s  # how long one drain attempt waits (None: followers.DRAIN_TIMEOUT_S)
        self.run_refs = tuple(run_refs)
        self.listeners = list(listeners)
        # Called once per loop for time-based checks (stalls, long outages); listeners with a tick() join in.
        self.tickers = [*tickers, *(t for t in (getattr(x, "tick", None) for x in listeners) if callable(t))]
        # Called once as the loop starts (the caller holds the lock): alert delivery re-sends what was pending.
        self.starters = [s for s in (getattr(x, "on_monitor_start", None) for x in listeners) if callable(s)]
        self.poll_interval = poll_interval or ctx.settings.config.monitor.poll_interval_s
        self.watchers: dict[str, asyncio.Task[None]] = {}
        self.host_watchers: dict[str, HostWatcher] = {}

    def notify(self, notice: Notice) -> None:
        if isinstance(notice, RunProgressed):
            error = any(e.get("kind") in WAKE_EVENT_KINDS for e in notice.events)
            for watcher in self.host_watchers.values():
                if notice.run_id in watcher.followers:
                    watcher.wake_up(FAST_POLLS_AFTER_ERROR if error else FAST_POLLS_AFTER_OUTPUT)
        for listener in self.listeners:
            listener(notice)

    def _pending_hosts(self) -> set[str]:
        with self.ctx.db() as s:
            return {r.host for r in queries.active_runs(s, self.run_refs)}

    async def run(self, *, until_done: bool = False, forever: bool = False) -> None:
        """Watch until the runs are terminal (until_done), or until none are active (default), or forever."""
        try:
            check_writable(self.ctx.sessionmaker)  # a read-only history: one clear error, not a loop
            for start in self.starters:
                start(self)
            while True:
                hosts = self._pending_hosts()
                for host in hosts:
                    task = self.watchers.get(host)
                    if task is not None and task.done() and not task.cancelled() and task.exception():
                        error = task.exception()
                        if isinstance(error, StoreError):  # nothing can be recorded: stop
                            raise error
                        if error is not None and is_read_only(error):
                            raise StoreError(f"cannot record: {describe_write_failure(error)}") from error
                        log.error("watching host %s failed: %r", host, error)
                    if task is None or task.done():
                        watcher = self.host_watchers[host] = HostWatcher(self, host)
                        self.watchers[host] = asyncio.create_task(watcher.run(), name=f"host-{host}")
                if not hosts and not forever:
                    return
                for tick in self.tickers:
                    tick(self)
                await asyncio.sleep(self.poll_interval)
        finally:
            for task in self.watchers.values():
                task.cancel()
            await asyncio.gather(*self.watchers.values(), return_exceptions=True)
            await self.ctx.close()
