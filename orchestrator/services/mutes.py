"""Muted runs: the monitor raises no alert for a run while its ``alerts_muted_at`` is set.

`eorch alerts mute|unmute RUN` and `m` in the TUI write it; ``orchestrator.alerts`` reads it into each run's
snapshot, and the pure rules (``alertrules``) raise nothing for a muted run: nothing is recorded, rung or sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from orchestrator.context import Context
from orchestrator.store import queries
from orchestrator.store.models import Run


@dataclass(frozen=True)
class MutedRun:
    id: str
    name: str
    host: str
    status: str
    muted_at: datetime


def set_muted(ctx: Context, ref: str, muted: bool) -> MutedRun | None:
    """Mute (or unmute) the run ``ref`` (id, prefix or name); the run as now muted, None once unmuted.
    Muting a muted run keeps its first time."""
    with ctx.db() as s:
        run = queries.get_run(s, ref)
        if muted and run.alerts_muted_at is None:
            run.alerts_muted_at = queries.utcnow()
        elif not muted:
            run.alerts_muted_at = None
        return _muted(run) if run.alerts_muted_at is not None else None


def toggle_muted(ctx: Context, run_id: str) -> MutedRun | None:
    """Unmute a muted run, mute any other; the run as now muted, or None."""
    with ctx.db() as s:
        muted = queries.get_run(s, run_id).alerts_muted_at is not None
    return set_muted(ctx, run_id, not muted)


def muted_runs(ctx: Context) -> list[MutedRun]:
    """Every muted run, most recently muted first."""
    with ctx.db() as s:
        rows = s.scalars(select(Run).where(Run.alerts_muted_at.is_not(None)).order_by(Run.alerts_muted_at.desc()))
        return [_muted(r) for r in rows]


def _muted(run: Run) -> MutedRun:
    assert run.alerts_muted_at is not None
    return MutedRun(run.id, run.name, run.host, run.status, run.alerts_muted_at)
