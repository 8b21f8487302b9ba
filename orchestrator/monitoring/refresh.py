"""Bring the runs a reading command shows up to date when no monitor is following them.

`eorch runs`, `eorch show` and the TUI (when it does not follow runs itself) call ``bring_up_to_date``: if
no monitor holds the lock, it takes it for a moment and runs one round of the monitor's own liveness pass
(``HostWatcher.poll``) per host, bounded by a short timeout, so a run that ended is drained and judged by the
same code as under a monitor (terminal only after its log is read to the end). A host that cannot be reached
in time keeps its runs as they were and is marked unreachable, so they are labelled "as of HH:MM"
(orchestrator.core.freshness.status_note).
Status changes found here go through the alert rules as a monitor's would, so the ``failed`` alert is not lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from orchestrator.context import Context
from orchestrator.core.notices import Notice, RunProgressed, RunStatusChanged
from orchestrator.errors import EorchError, MonitorBusy
from orchestrator.monitoring.followers import MAX_DRAIN_ATTEMPTS
from orchestrator.monitoring.lockfile import REFRESH_ROLE, REFRESH_WAIT_S, MonitorLock, monitor_holds
from orchestrator.monitoring.monitor import Monitor
from orchestrator.monitoring.watcher import HostWatcher
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries


@dataclass(frozen=True)
class Freshness:
    """Whether a monitor follows the runs (then nothing was refreshed), and the hosts a refresh did not reach."""

    monitor_running: bool
    unreached: dict[str, str] = field(default_factory=dict)  # host → why it could not be checked


#: How long a refresh lets the followers of live runs read their logs (a large backlog is left to a monitor).
CATCH_UP_S = 2.0


async def bring_up_to_date(ctx: Context, run_ids: Iterable[str], timeout_s: float | None = None,
                           wait_s: float = REFRESH_WAIT_S) -> Freshness:
    """One liveness round for the given runs' active ones, unless a monitor is following them already.

    Another refresh holding the lock is waited for up to ``wait_s`` (the TUI passes 0 and tries again later)."""
    lock = MonitorLock(ctx.settings.monitor_lock, role=REFRESH_ROLE)
    try:
        lock.acquire(wait_s)
    except MonitorBusy:
        return Freshness(monitor_running=monitor_holds(lock.path))
    notices: list[Notice] = []
    try:
        with ctx.db() as s:
            active = queries.active_runs(s, list(run_ids))
            by_host: dict[str, list[str]] = {}
            for run in active:
                if run.remote_dir:
                    by_host.setdefault(run.host, []).append(run.id)
        if not by_host:
            return Freshness(monitor_running=False)
        timeout = ctx.settings.config.monitor.refresh_timeout_s if timeout_s is None else timeout_s
        outcomes = await asyncio.gather(
            *(_bounded(_one_round(ctx, host, ids, notices), timeout) for host, ids in by_host.items())
        )
        unreached = {host: why for host, why in zip(by_host, outcomes) if why is not None}
        with ctx.db() as s:
            for host, why in unreached.items():
                queries.set_reachability(s, host, False, why)
    finally:
        lock.release()
    _raise_alerts(ctx, notices)
    return Freshness(monitor_running=False, unreached=unreached)


async def _bounded(round_: object, timeout: float) -> str | None:
    """None when the round finished in time, else why not (one line)."""
    try:
        await asyncio.wait_for(round_, timeout)  # type: ignore[arg-type]
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except EorchError as err:
        return str(err)
    except OSError as err:
        return err.strerror or str(err)
    return None


async def _one_round(ctx: Context, host: str, run_ids: list[str], notices: list[Notice]) -> None:
    """The monitor's liveness pass for this host's runs; ended runs are drained and judged (a few tries)."""
    session = await ctx.session(host)
    monitor = Monitor(ctx, run_refs=run_ids, listeners=[notices.append])
    watcher = HostWatcher(monitor, host)
    monitor.host_watchers[host] = watcher
    watcher.connection.set_reachable(True)
    try:
        for _ in range(MAX_DRAIN_ATTEMPTS):
            if not await watcher.poll(session):
                break  # nothing active left
            if not _still_draining(watcher):
                break  # the rest are alive: their status is current
        await _catch_up(session, watcher)
    finally:
        await watcher.stop()


async def _catch_up(session: HostSession, watcher: HostWatcher, within_s: float = CATCH_UP_S) -> None:
    """Let the live runs' followers read what their logs hold now (shards, phase, last lines), for a moment:
    stopped at once, a refresh of a run nobody followed showed it without its log."""
    dirs = {r.id: r.remote_dir for r in watcher.active_runs() if r.id in watcher.followers and r.remote_dir}
    if not dirs:
        return
    report = await session.status_many(list(dirs.values()))
    sizes = {run_id: live.log_size or 0 for run_id, live in zip(dirs, report.runs, strict=True)}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    followed = watcher.followers.followed
    while loop.time() < deadline and any(
            run_id in followed and followed[run_id].log.fed < size for run_id, size in sizes.items()):
        await asyncio.sleep(0.05)


def _still_draining(watcher: HostWatcher) -> bool:
    """Whether an ended run's log was not read to the end in this round (the next round tries again)."""
    active = {r.id for r in watcher.active_runs()}
    return any(run_id in active for run_id in watcher.followers.drain_attempts)


def _raise_alerts(ctx: Context, notices: list[Notice]) -> None:
    """Status changes found by a refresh deserve the alerts a monitor would have raised (once each)."""
    changes = [n for n in notices if isinstance(n, RunStatusChanged | RunProgressed)]
    if not any(isinstance(n, RunStatusChanged) for n in changes):
        return
    from orchestrator.alerts.engine import monitor_listeners

    for listener in monitor_listeners(ctx, bell=False):
        for notice in changes:
            listener(notice)
