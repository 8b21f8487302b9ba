"""Runs as the CLI and the TUI read them: by reference, filtered, newest first, with their events.

Every function opens its own session on the Context and returns views (`RunView`) or plain values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from orchestrator.context import Context
from orchestrator.core.freshness import status_note
from orchestrator.core.history import RunFilter
from orchestrator.core.recipesteps import StepLine, recipe_steps
from orchestrator.services.runview import RunView, view_of
from orchestrator.store import history, queries
from orchestrator.store.models import Host, Run


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One recorded event of a run: when, what kind, its data."""

    ts: datetime
    kind: str
    data: dict[str, Any]


def note_of(run: Run, hosts: Mapping[str, Host], monitor_running: bool) -> str:
    """"as of 08:22, no monitor running; gpu unreachable: …" when the run's status could not be confirmed."""
    host = hosts.get(run.host)
    return status_note(run.status, checked_at=run.checked_at, created_at=run.created_at, host=run.host,
                       host_reachable=host.reachable if host else None,
                       host_error=host.last_error if host else None, monitor_running=monitor_running)


def views_of(session: Session, runs: Sequence[Run], monitor_running: bool | None = None) -> list[RunView]:
    """Views of rows; with ``monitor_running`` known, each carries its staleness note."""
    if monitor_running is None:
        return [view_of(r) for r in runs]
    hosts = {h.name: h for h in queries.list_hosts(session)}
    return [view_of(r, note_of(r, hosts, monitor_running)) for r in runs]


def resolve(ctx: Context, ref: str) -> str:
    """The id of the run ``ref`` names (id, unique prefix or unique name); NotFound / UsageError otherwise."""
    with ctx.db() as s:
        return queries.get_run(s, ref).id


def get(ctx: Context, ref: str, monitor_running: bool | None = None) -> RunView:
    with ctx.db() as s:
        return views_of(s, [queries.get_run(s, ref)], monitor_running)[0]


def recent(ctx: Context, limit: int = 200, monitor_running: bool | None = None) -> tuple[RunView, ...]:
    """The newest runs first (the TUI's runs screen)."""
    with ctx.db() as s:
        return tuple(views_of(s, queries.list_runs(s, limit=limit), monitor_running))


def filtered(ctx: Context, flt: RunFilter, limit: int | None = 50,
             monitor_running: bool | None = None) -> list[RunView]:
    """Runs matching every filter, newest first (`eorch runs`)."""
    with ctx.db() as s:
        return views_of(s, history.filtered_runs(s, flt, limit=limit), monitor_running)


def any_run(ctx: Context) -> bool:
    with ctx.db() as s:
        return queries.any_run(s)


def active_ids(ctx: Context, refs: Sequence[str] = ()) -> list[str]:
    """The ids of the runs named that have not ended; without names, of every run that has not."""
    with ctx.db() as s:
        return [r.id for r in queries.active_runs(s, list(refs))]


def active(ctx: Context, refs: Sequence[str] = ()) -> list[RunView]:
    with ctx.db() as s:
        return views_of(s, queries.active_runs(s, list(refs)))


def events(ctx: Context, run_id: str, kinds: Sequence[str] = ()) -> list[RunEvent]:
    with ctx.db() as s:
        return [RunEvent(e.ts, e.kind, dict(e.data or {})) for e in queries.events_of(s, run_id, kinds=kinds)]


def steps(ctx: Context, run_id: str) -> tuple[StepLine, ...]:
    """A recipe run's steps and how each went (empty for a plain command)."""
    return recipe_steps(e.data for e in events(ctx, run_id, kinds=("step_step",)))


def find(ctx: Context, run_ids: Sequence[str]) -> list[RunView]:
    """The runs with these exact ids that exist, in that order (no error for one that does not)."""
    with ctx.db() as s:
        return [view_of(r) for r in (s.get(Run, i) for i in run_ids) if r is not None]
