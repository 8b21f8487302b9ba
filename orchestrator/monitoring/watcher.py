"""One host's watcher: follow its active runs, judge their liveness, record how they end.

It keeps the host's session open (``connection``: reconnecting with backoff; a dropped link marks the host
unreachable, never a run failed), runs a follower per active run (``followers``), and polls liveness
through the agent. Each report goes, in order, through truncation recovery, the Slurm state, and the pure
decision (``decide``); a run becomes terminal only after its log has been drained to the size it had when
the process ended.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.core.notices import RunStatusChanged
from orchestrator.core.runstate import Liveness, RunStatus
from orchestrator.errors import HostError, RemoteOpFailed
from orchestrator.logparse.events import RootCause
from orchestrator.monitoring.connection import HostConnection
from orchestrator.monitoring.decide import Ending, StoredRun, assess, settle
from orchestrator.monitoring.followers import Followed, Followers
from orchestrator.monitoring.observed import record_observation
from orchestrator.monitoring.slurmstate import record_scheduler
from orchestrator.monitoring.truncationrecovery import restart_if_truncated
from orchestrator.remote.hosts import HostSession
from orchestrator.remote.kernelevidence import killed_root_cause
from orchestrator.store import queries
from orchestrator.store.models import Run
from orchestrator.store.queries import utcnow
from worker.protocol import RunStatusReport

if TYPE_CHECKING:
    from orchestrator.monitoring.monitor import Monitor

log = logging.getLogger("eorch.monitor")

FAST_POLL_S = 0.05


def stored_run(row: Run) -> StoredRun:
    return StoredRun(RunStatus(row.status), row.phase, bool(row.cancel_requested), row.root_cause)


class HostWatcher:
    def __init__(self, monitor: Monitor, host: str) -> None:
        self.monitor = monitor
        self.ctx = monitor.ctx
        self.host = host
        self.connection = HostConnection(self.ctx, host, monitor.notify)
        self.followers = Followers(self.ctx, monitor.notify, monitor.drain_timeout_s)
        self.wake = asyncio.Event()
        self.fast_polls = 0

    @property
    def followed(self) -> dict[str, Followed]:
        """The runs followed now, by run id."""
        return self.followers.followed

    async def run(self) -> None:
        try:
            while True:
                try:
                    session = await self.connection.open()
                    if not await self.poll(session):
                        return
                except HostError as err:
                    self.followers.stop_all()
                    await self.connection.lost(err)
                    continue
                except RemoteOpFailed as err:  # the host is fine, its worker failed this round: say so, retry
                    await self.connection.op_failed(err)
                    continue
                await self._pause()
        finally:
            # Wait for the followers to stop their tails: left to asyncio.run's final cancel sweep, a second
            # cancel cut their stop short and the tail was reaped after the loop closed (Ctrl-C on `watch`
            # printed "Event loop is closed").
            await self.stop()

    async def stop(self) -> None:
        """Stop following, and wait for the followers to have stopped."""
        await asyncio.gather(*self.followers.stop_all(), return_exceptions=True)

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

    def active_runs(self) -> list[Run]:
        """This host's active runs among those the monitor watches (with a run directory to follow)."""
        with self.ctx.db() as s:
            runs = queries.active_runs(s, self.monitor.run_refs)
        return [r for r in runs if r.host == self.host and r.remote_dir]

    async def poll(self, session: HostSession) -> bool:
        """One liveness round for this host's active runs; False when there is nothing left to watch."""
        runs = self.active_runs()
        if not runs:
            return False
        self.followers.follow_all(session, runs)
        # What each follower had read before the host looked: the only size a truncation is judged against.
        read_before = self.followers.read_so_far(r.id for r in runs)
        report = await session.status_many([r.remote_dir or "" for r in runs])  # active_runs: all have one
        for run, live in zip(runs, report.runs, strict=True):
            if live.error is not None:
                self._unreadable(run, live.error)
                continue
            ended_at = record_observation(self.ctx, run.id, live, report.now)
            await self.judge(session, run, live, read_before[run.id], ended_at)
        return True

    def _unreadable(self, run: Run, error: str) -> None:
        """The host could not read this run's facts (a corrupt file in its run directory): its status stays as
        it was, unconfirmed; the error is recorded once (until it changes) and logged each round."""
        log.warning("run %s: its status cannot be read on %s: %s", run.id, self.host, error)
        with self.ctx.db() as s:
            seen = queries.events_of(s, run.id, kinds=("status_unreadable",))
            if not seen or (seen[-1].data or {}).get("error") != error:
                queries.add_event(s, run.id, "status_unreadable", {"error": error})

    async def judge(self, session: HostSession, run: Run, live: RunStatusReport, read_before: int,
                    ended_at: datetime | None = None) -> None:
        followed = self.followers.get(run.id)
        if followed is None:  # restarted by a truncation found earlier this round
            return
        if restart_if_truncated(self.ctx, session, run, live, self.followers, read_before, self.monitor.notify):
            return
        record_scheduler(self.ctx, run.id, live, self.monitor.notify)
        seen = assess(live, stored_run(run), pending_for_s=(utcnow() - run.created_at).total_seconds())
        if seen.launch_cut_off:
            self._propose(run.id, RunStatus.RUNNING, recorded_by="monitor", note="its launch was cut off")
        if not seen.ended:
            return
        # The process is gone: read the rest of the log before deciding how it ended (unless it is gone too).
        if seen.drain_first and not await self.followers.drained(run, followed, live):
            return  # not read to the end yet: the next round follows again from the committed offset
        self.followers.drop(run.id)
        killed = await killed_root_cause(session, run, live)  # a log that just stops: the kernel log
        self._record_end(run.id, live, seen.liveness, ended_at, log_failed=followed.log.log_failed, killed=killed)

    def _record_end(self, run_id: str, live: RunStatusReport, liveness: Liveness, ended_at: datetime | None, *,
                    log_failed: bool, killed: RootCause | None = None) -> None:
        with self.ctx.db() as s:
            row = queries.run_row(s, run_id)
            if row is None:
                return
            ending = settle(live, liveness, stored_run(row), log_failed=log_failed, killed=killed)
            old = row.status
            _apply(row, ending)
            changed = queries.propose_status(
                s, row, ending.status, exit_code=ending.exit_code, boot_changed=ending.boot_changed,
                ended_at=ended_at, **ending.facts
            )
        if changed:
            self.monitor.notify(RunStatusChanged(run_id, old, ending.status.value))

    def _propose(self, run_id: str, status: RunStatus, **data: Any) -> None:
        with self.ctx.db() as s:
            row = queries.run_row(s, run_id)
            old, changed = (row.status, queries.propose_status(s, row, status, **data)) if row else (None, False)
        if changed and old is not None:
            self.monitor.notify(RunStatusChanged(run_id, old, status.value))


def _apply(row: Run, ending: Ending) -> None:
    """The run's columns as the ending says (its status goes through ``queries.propose_status``)."""
    row.cancel_requested = ending.cancel_requested
    row.exit_code = ending.exit_code
    row.phase = ending.phase
    if ending.root_cause is not None:
        row.root_cause = ending.root_cause.root_cause
        if ending.root_cause.sets_signature:
            row.signature = ending.root_cause.signature
