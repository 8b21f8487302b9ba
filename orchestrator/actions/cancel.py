"""Cancelling a run: the request counts only once it reached the host.

Nothing is written to the history before the host is reached: a cancel that fails on an unreachable host
leaves the run as it was, and its later exit code decides. The host's cancel op writes a marker in the run
directory before it signals anything, so whoever records the end (this command, or a monitor following
elsewhere) knows the job ended by a cancel even if the reply to this command never arrived.
"""

from __future__ import annotations

from typing import Any

from orchestrator.context import Context
from orchestrator.core.runstate import RunStatus
from orchestrator.errors import HostError, MonitorBusy, RemoteOpFailed
from orchestrator.monitoring.followers import MAX_DRAIN_ATTEMPTS
from orchestrator.monitoring.lock import follow_or_read
from orchestrator.monitoring.monitor import Monitor
from orchestrator.monitoring.watcher import HostWatcher
from orchestrator.store import queries


async def cancel_run(ctx: Context, ref: str, grace_s: float | None = None) -> dict[str, Any]:
    """TERM the run's processes, KILL after the grace period, confirm nothing is left; record the end."""
    with ctx.db() as s:
        run = queries.get_run(s, ref)
        if RunStatus(run.status).is_terminal():
            return {"run_id": run.id, "status": run.status, "already_terminal": True}
    session = await ctx.session(run.host)
    grace = ctx.settings.config.monitor.cancel_grace_s if grace_s is None else grace_s
    try:
        result = await session.call_once("cancel", run_dir=run.remote_dir, run_id=run.id, grace_s=grace)
    except RemoteOpFailed as err:
        raise HostError(run.host, str(err)) from err
    dir_gone = result.get("exists") is False
    with ctx.db() as s:
        row = queries.run_row(s, run.id)
        if row is not None:
            row.cancel_requested = True
            queries.add_event(s, run.id, "cancel_requested", {"reached_host": True, "run_dir_gone": dir_gone})
    if result["remaining"]:
        raise HostError(run.host, f"processes of run {run.id} survived SIGKILL: {result['remaining']}")
    outcome: dict[str, Any] = {"run_id": run.id, "remaining": [], "rc": result.get("rc"), "run_dir_gone": dir_gone}
    # Record the end ourselves unless a monitor elsewhere is following (it will, from the same facts).
    async def record_end() -> bool:
        watcher = HostWatcher(Monitor(ctx, run_refs=[run.id], poll_interval=0.2), run.host)
        try:
            for _ in range(MAX_DRAIN_ATTEMPTS):
                if not await watcher.poll(session):  # nothing active left: recorded
                    break
        finally:
            watcher.followers.stop_all()
        return True

    async def leave_to_monitor(busy: MonitorBusy) -> bool:
        return False

    if not await follow_or_read(ctx.settings.monitor_lock, record_end, leave_to_monitor):
        return {**outcome, "status": "cancelled", "recorded_by": "monitor"}
    with ctx.db() as s:
        final = queries.run_row(s, run.id)
        status = final.status if final else "cancelled"
        reason = queries.status_reason(s, run.id) if status == RunStatus.LOST.value else None
    return {**outcome, "status": status, "reason": reason}

