"""A Slurm run's scheduler state, as the host's liveness report gives it, kept on the run.

The job's state, pending reason and node are recorded (with an event each time they change); a run still
``launching`` becomes ``running`` once the report says it started, with its job id and node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orchestrator.context import Context
from orchestrator.core.notices import Notice, RunStatusChanged
from orchestrator.core.runstate import RunStatus
from orchestrator.store import queries
from worker.protocol import RunStatusReport


def scheduler_seen(scheduler: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the scheduler's report kept on the run."""
    return {k: scheduler.get(k) for k in ("state", "reason", "node")}


def record_scheduler(ctx: Context, run_id: str, live: RunStatusReport, notify: Callable[[Notice], None]) -> None:
    """Slurm runs: keep the job's state and pending reason on the run; launching → running once it started."""
    scheduler = live.scheduler
    if not scheduler:
        return
    seen = scheduler_seen(scheduler)
    changed = False
    with ctx.db() as s:
        row = queries.run_row(s, run_id)
        if row is None:
            return
        if row.scheduler_state != seen:
            row.scheduler_state = seen
            queries.add_event(s, run_id, "scheduler_state", {"job_id": scheduler.get("job_id"), **seen})
        old = row.status
        if live.started and old == RunStatus.LAUNCHING.value:
            changed = queries.propose_status(s, row, RunStatus.RUNNING, slurm_job_id=scheduler.get("job_id"),
                                             node=scheduler.get("node"))
    if changed:
        notify(RunStatusChanged(run_id, old, RunStatus.RUNNING.value))
