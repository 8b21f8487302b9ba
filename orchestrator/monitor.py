"""The loop shared by ``eorch watch``, ``eorch daemon`` and the TUI: follow, judge liveness, record.

One ``HostWatcher`` per host with active runs: it keeps the host's session open (reconnecting with
backoff; a dropped link marks the host unreachable, never a run failed), runs a log follower (and a
step-event follower for recipe runs) per active run, and polls liveness through the agent. A run
becomes terminal only after its log has been drained to the size it had when the process ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.context import Context
from orchestrator.errors import HostError, StoreError
from orchestrator.follower import LogFollower, StepEventFollower
from orchestrator.hosts import HostSession
from orchestrator.kernelevidence import killed_root_cause
from orchestrator.liveness import cancel_reached_host, liveness_from, lost_reason, lost_root_cause
from orchestrator.monitorlock import MonitorLock  # noqa: F401 - its old home, still imported from here
from orchestrator.notices import (
    HostReachabilityChanged,
    LogTruncated,
    Notice,
    RunProgressed,
    RunStatusChanged,
)
from orchestrator.observed import record_observation
from orchestrator.runstate import RunStatus, ended, status_from_liveness
from orchestrator.store import queries
from orchestrator.store.db import check_writable, describe_write_failure, is_read_only
from orchestrator.store.models import Run
from orchestrator.store.queries import utcnow
from orchestrator.truncation import truncation

log = logging.getLogger("eorch.monitor")

DRAIN_TIMEOUT_S = 30.0
MAX_DRAIN_ATTEMPTS = 3
BACKOFF_MAX_S = 30.0
# New output often comes just before an exit (a crash prints its traceback, then dies): after output, check
# liveness every FAST_POLL_S for a short while, longer after an error, so a crash is recorded (and alerted)
# within ~100 ms instead of up to a poll interval later.
WAKE_EVENT_KINDS = frozenset({"error_seen", "traceback_completed", "root_cause_found"})
FAST_POLL_S = 0.05
FAST_POLLS_AFTER_OUTPUT = 6
FAST_POLLS_AFTER_ERROR = 60


@dataclass
class _Followed:
    log: LogFollower
    steps: StepEventFollower | None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()

    def failure(self) -> BaseException | None:
        """The error a follower task died of, if one did."""
        for task in self.tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return task.exception()
        return None


class HostWatcher:
    def __init__(self, monitor: Monitor, host: str) -> None:
        self.monitor = monitor
        self.ctx = monitor.ctx
        self.host = host
        self.followed: dict[str, _Followed] = {}
        self.drain_attempts: dict[str, int] = {}
        self.reachable: bool | None = None
        self.wake = asyncio.Event()
        self.fast_polls = 0

    def _set_reachable(self, reachable: bool, error: str | None = None) -> None:
        if self.reachable == reachable:
            return
        self.reachable = reachable
        with self.ctx.db() as s:
            queries.set_reachability(s, self.host, reachable, error)
        self.monitor.notify(HostReachabilityChanged(self.host, reachable, error))

    def _stop_followers(self) -> list[asyncio.Task[None]]:
        tasks = [task for followed in self.followed.values() for task in followed.tasks]
        for followed in self.followed.values():
            followed.cancel()
        self.followed.clear()
        return tasks

    async def run(self) -> None:
        backoff = 0.5
        try:
            while True:
                try:
                    session = await self.ctx.session(self.host)
                    self._set_reachable(True)
                    backoff = 0.5
                    if not await self.poll(session):
                        return
                except HostError as err:
                    self._stop_followers()
                    await self.ctx.drop_session(self.host)
                    self._set_reachable(False, str(err))
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
                    continue
                await self._pause()
        finally:
            # Wait for the followers to stop their tails: left to asyncio.run's final cancel sweep, a second
            # cancel cut their stop short and the tail was reaped after the loop closed (Ctrl-C on `watch`
            # printed "Event loop is closed").
            await asyncio.gather(*self._stop_followers(), return_exceptions=True)

    def wake_up(self, polls: int) -> None:
        self.fast_polls = max(self.fast_polls, polls)
        self.wake.set()

    async def _pause(self) -> None:
        if self.fast_polls > 0:
            self.fast_polls -= 1
            await asyncio.sleep(FAST_POLL_S)
            return
        # Not asyncio.wait_for: on Python 3.11 it swallows a cancel that arrives as the event is set (a wake
        # from a follower at the moment of Ctrl-C), and the watcher then polled on for ever.
        waiter = asyncio.ensure_future(self.wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=self.monitor.poll_interval)
        finally:
            waiter.cancel()
        self.wake.clear()

    def _active_runs(self) -> list[Run]:
        with self.ctx.db() as s:
            runs = queries.active_runs(s, self.monitor.run_refs)
        return [r for r in runs if r.host == self.host and r.remote_dir]

    def _follow(self, session: HostSession, run: Run) -> _Followed:
        log = LogFollower(self.ctx, session, run, self.monitor.notify)
        steps = StepEventFollower(self.ctx, session, run, self.monitor.notify) if run.kind == "eagle3-extract" else None
        followed = _Followed(log, steps)
        followed.tasks.append(asyncio.create_task(log.run(), name=f"log-{run.id}"))
        if steps is not None:
            followed.tasks.append(asyncio.create_task(steps.run(), name=f"steps-{run.id}"))
        self.followed[run.id] = followed
        return followed

    async def poll(self, session: HostSession) -> bool:
        """One liveness round for this host's active runs; False when there is nothing left to watch."""
        runs = self._active_runs()
        if not runs:
            return False
        for run_id, followed in list(self.followed.items()):
            self._check_follower(run_id, followed)
        for run in runs:
            if run.id not in self.followed:
                self._follow(session, run)
        # What each follower had read before the host looked: the only size a truncation is judged against.
        read_before = {r.id: self.followed[r.id].log.fed for r in runs}
        report = await session.call("status_many", run_dirs=[r.remote_dir for r in runs])
        for run, live in zip(runs, report["runs"]):
            live = {**live, "ended_at": record_observation(self.ctx, run.id, live, report.get("now"))}
            await self.judge(session, run, live, read_before[run.id])
        return True

    def _check_follower(self, run_id: str, followed: _Followed) -> None:
        """A follower that died is restarted from the committed offset; a lost link ends this round."""
        error = followed.failure()
        if error is None:
            return
        followed.cancel()
        del self.followed[run_id]
        if isinstance(error, HostError):
            raise error
        log.error("following run %s failed, restarting from the committed offset: %r", run_id, error)

    async def _drained(self, run: Run, followed: _Followed, live: dict[str, Any]) -> bool:
        """Read the log (and step events) up to the size they had when the process ended."""
        followed.log.stream.drain_to(live["log_size"] or 0)
        if followed.steps is not None:
            followed.steps.stream.drain_to(live["events_size"] or 0)
        read_before = followed.log.fed
        _, pending = await asyncio.wait(followed.tasks, timeout=DRAIN_TIMEOUT_S)
        error = followed.failure()
        if not pending and error is None:
            return True
        if error is None and followed.log.fed > read_before:
            return False  # a long backlog, still being read: keep following, it is no failed attempt
        followed.cancel()
        del self.followed[run.id]
        attempts = self.drain_attempts[run.id] = self.drain_attempts.get(run.id, 0) + 1
        if isinstance(error, HostError):
            raise error
        if attempts < MAX_DRAIN_ATTEMPTS:
            return False
        with self.ctx.db() as s:
            queries.add_event(s, run.id, "log_not_drained",
                              {"log_size": live["log_size"], "error": repr(error) if error else "timed out"})
        return True

    async def judge(self, session: HostSession, run: Run, live: dict[str, Any], read_before: int) -> None:
        followed = self.followed.get(run.id)
        if followed is None:  # restarted by a truncation found earlier this round
            return
        if self._check_truncation(session, run, live, followed, read_before):
            return
        self._record_scheduler(run, live)
        pending_for = (utcnow() - run.created_at).total_seconds() if run.status == RunStatus.PENDING.value else None
        liveness = liveness_from(live, pending_for_s=pending_for)
        if pending_for is not None and liveness.alive:
            self._propose(run.id, RunStatus.RUNNING, recorded_by="monitor", note="its launch was cut off")
        if not ended(liveness):
            return
        # The process is gone: read the rest of the log before deciding how it ended (unless it is gone too).
        if not liveness.vanished and not await self._drained(run, followed, live):
            return  # not read to the end yet: the next round follows again from the committed offset
        followed.cancel()
        self.followed.pop(run.id, None)
        killed = await killed_root_cause(session, run, live)  # a log that just stops: exit status, kernel log
        with self.ctx.db() as s:
            row = s.get(Run, run.id)
            if row is None:
                return
            row.cancel_requested = row.cancel_requested or cancel_reached_host(live)
            proposed = status_from_liveness(
                liveness, cancel_requested=row.cancel_requested, log_failed=followed.log.log_failed
            )
            old = row.status
            row.exit_code = live["rc"]
            if proposed is RunStatus.FAILED and row.root_cause is None and killed is not None:
                row.root_cause, row.signature = killed.to_json(), killed.signature
            if proposed in (RunStatus.FAILED, RunStatus.LOST) and row.phase not in ("failed",):
                row.phase = "failed"
            elif proposed == RunStatus.SUCCEEDED and row.phase not in ("failed",):
                row.phase = "stopped"
            facts = {"scheduler": live["scheduler"]} if live.get("scheduler") else {}
            if (reason := lost_reason(liveness, live)) is not None:
                facts["reason"] = reason
                if proposed is RunStatus.LOST and not (row.root_cause or {}).get("traceback"):  # show and watch print it
                    row.root_cause = lost_root_cause(reason)
            changed = queries.propose_status(
                s, row, proposed, exit_code=live["rc"], boot_changed=live["boot_changed"],
                ended_at=live.get("ended_at"), **facts
            )
        if changed:
            self.monitor.notify(RunStatusChanged(run.id, old, proposed.value))

    def _propose(self, run_id: str, status: RunStatus, **data: Any) -> None:
        with self.ctx.db() as s:
            row = s.get(Run, run_id)
            old, changed = (row.status, queries.propose_status(s, row, status, **data)) if row else (None, False)
        if changed and old is not None:
            self.monitor.notify(RunStatusChanged(run_id, old, status.value))

    def _record_scheduler(self, run: Run, live: dict[str, Any]) -> None:
        """Slurm runs: keep the job's state and pending reason on the run; launching → running once it started."""
        scheduler = live.get("scheduler")
        if not scheduler:
            return
        seen = {k: scheduler.get(k) for k in ("state", "reason", "node")}
        changed = False
        with self.ctx.db() as s:
            row = s.get(Run, run.id)
            if row is None:
                return
            if row.scheduler_state != seen:
                row.scheduler_state = seen
                queries.add_event(s, run.id, "scheduler_state", {"job_id": scheduler.get("job_id"), **seen})
            old = row.status
            if live["started"] and old == RunStatus.LAUNCHING.value:
                changed = queries.propose_status(s, row, RunStatus.RUNNING, slurm_job_id=scheduler.get("job_id"),
                                                 node=scheduler.get("node"))
        if changed:
            self.monitor.notify(RunStatusChanged(run.id, old, RunStatus.RUNNING.value))

    def _check_truncation(self, session: HostSession, run: Run, live: dict[str, Any], followed: _Followed,
                          read_before: int) -> bool:
        """A log replaced (new inode) or shrunk below what had been read before the host looked: start over."""
        size, inode = live.get("log_size"), live.get("log_inode")
        if size is None:
            return False
        found = truncation(size=size, inode=inode, known_inode=run.log_inode, read_before=read_before)
        if run.log_inode is None and inode is not None:
            with self.ctx.db() as s:
                row = s.get(Run, run.id)
                if row is not None:
                    row.log_inode = inode
        if found is None:
            return False
        replaced = found.replaced
        old_offset = followed.log.fed
        followed.cancel()
        del self.followed[run.id]
        with self.ctx.db() as s:
            row = s.get(Run, run.id)
            if row is None:
                return True
            queries.add_event(s, run.id, "log_truncated",
                              {"old_offset": old_offset, "new_size": size, "replaced": replaced})
            row.log_offset, row.parser_state, row.log_inode = 0, None, inode
        self.monitor.notify(LogTruncated(run.id, old_offset, size))
        with self.ctx.db() as s:
            fresh = s.get(Run, run.id)
        if fresh is not None:
            self._follow(session, fresh)
        return True


class Monitor:
    def __init__(
        self,
        ctx: Context,
        *,
        run_refs: Sequence[str] = (),
        listeners: Sequence[Callable[[Notice], None]] = (),
        poll_interval: float | None = None,
        tickers: Sequence[Callable[[Monitor], None]] = (),
    ) -> None:
        self.ctx = ctx
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
                if notice.run_id in watcher.followed:
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
