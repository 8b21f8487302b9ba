"""What the screens show, read from the history as frozen values (no Textual here).

Every function takes the Context and returns plain values, so thread workers can call them and post the
result; nothing here keeps a SQLAlchemy object alive past its session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from orchestrator.context import Context
from orchestrator.core.recipesteps import StepLine
from orchestrator.core.runstate import RunStatus
from orchestrator.errors import EorchError
from orchestrator.logparse import signature_hint
from orchestrator.logparse.inert import inert, inert_line
from orchestrator.services import alerts, hosts, runs
from orchestrator.services import history as history_service
from orchestrator.services.hosts import HostView
from orchestrator.services.runview import RunView

Clock = Callable[[], datetime]

# Log phases as the timeline names them.
PHASE_LABELS = {
    "starting": "launch", "loading": "loading", "loaded": "loaded", "serving": "ready",
    "running": "running", "stopped": "end", "failed": "end",
}
TIMELINE_ORDER = ("launch", "loading", "loaded", "ready", "running", "end")


@dataclass(frozen=True)
class TimelineStep:
    label: str
    at: datetime
    duration_s: float | None  # None: still going on
    detail: str = ""


@dataclass(frozen=True)
class SimilarRun:
    id: str
    name: str
    status: str
    created_at: datetime
    changed: str = ""  # what changed between that run and this one (`history.describe_changes`)


@dataclass(frozen=True)
class RunDetail:
    """The run detail screen's content: the run's view, its timeline, recipe steps and similar failures."""

    row: RunView
    hint: str | None
    timeline: tuple[TimelineStep, ...]
    similar: tuple[SimilarRun, ...] = ()
    steps: tuple[StepLine, ...] = ()  # the recipe's steps, for recipe runs

    @property
    def command(self) -> tuple[str, ...]:
        return self.row.command

    @property
    def env(self) -> dict[str, str]:
        return self.row.env

    @property
    def cwd(self) -> str | None:
        return self.row.cwd

    @property
    def remote_dir(self) -> str | None:
        return self.row.remote_dir

    @property
    def log_offset(self) -> int:
        return self.row.log_offset

    @property
    def cancel_requested(self) -> bool:
        return self.row.cancel_requested

    @property
    def env_fingerprint(self) -> dict[str, Any] | None:
        return self.row.env_fingerprint

    @property
    def patch_set(self) -> dict[str, Any] | None:
        return self.row.patch_set

    @property
    def root_cause(self) -> dict[str, Any] | None:
        return self.row.root_cause

    @property
    def evidence(self) -> dict[str, Any] | None:
        """A failure's first error line and log tail."""
        return self.row.evidence

    @property
    def earlier_runs(self) -> tuple[dict[str, Any], ...]:
        """The tries before the last in the job's log (it started vLLM again): the run is judged by the last."""
        return self.row.earlier_runs

    @property
    def preflight(self) -> dict[str, Any] | None:
        """The launch's preflight report."""
        return self.row.preflight

    @property
    def outputs(self) -> dict[str, Any] | None:
        """The recipe's outputs: dir, samples, verified, bytes."""
        return self.row.outputs

    @property
    def log_path(self) -> str | None:
        return self.row.log_path


@dataclass(frozen=True)
class AlertRow:
    title: str
    body: str
    kind: str
    created_at: datetime
    run_id: str | None = None
    delivery: str = ""  # recorded alerts: sent / pending / failed / expired / none (orchestrator.alerts.outbox)
    delivery_detail: str = ""  # one line per channel


def _inert_values(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """A job's strings (root cause, traceback) for the screen: no escape sequence reaches the terminal."""
    if not record:
        return None
    return {k: inert(v) if isinstance(v, str) else v for k, v in record.items()}


def on_screen(view: RunView) -> RunView:
    """The view as the screens show it: the job's strings made inert (no escape sequence reaches the terminal)
    and the phase worth showing next to the status (`RunView.shown_phase`) as its phase."""
    return replace(view, name=inert_line(view.name), host=inert_line(view.host), phase=inert_line(view.shown_phase),
                   signature=inert_line(view.signature) if view.signature else view.signature,
                   exception=inert_line(view.exception) if view.exception else view.exception,
                   root_cause=_inert_values(view.root_cause), command=tuple(inert_line(a) for a in view.command))


def load_runs(ctx: Context, limit: int = 200, monitor_running: bool = True) -> tuple[RunView, ...]:
    """Newest first; ``monitor_running`` says whether some process follows the runs (for the "as of" note)."""
    return tuple(on_screen(v) for v in runs.recent(ctx, limit=limit, monitor_running=monitor_running))


def timeline(row: RunView, events: Sequence[tuple[datetime, str, dict[str, Any]]], now: datetime) -> tuple[
    TimelineStep, ...
]:
    """launch → loading → loaded → ready → running → end, from status and phase events, with durations."""
    marks: list[tuple[str, datetime, str]] = [("launch", row.started_at or row.created_at, "")]
    seen = {"launch"}
    for ts, kind, data in events:
        label, detail = None, ""
        if kind in ("phase_changed", "phase"):
            phase = str(data.get("phase") or data.get("to") or "")
            label = PHASE_LABELS.get(phase)
            if phase == "failed":
                detail = "failed"
        elif kind == "status" and RunStatus(str(data.get("to", "pending"))).is_terminal():
            label, detail = "end", str(data.get("to"))
        if label is None or label in seen:
            continue
        seen.add(label)
        marks.append((label, ts, detail))
    if row.terminal and "end" not in seen:
        marks.append(("end", row.ended_at or marks[-1][1], row.status))
    marks.sort(key=lambda m: (m[1], TIMELINE_ORDER.index(m[0])))
    steps = []
    for i, (label, at, detail) in enumerate(marks):
        if label == "end":
            steps.append(TimelineStep(label, at, 0.0, detail or row.status))
            continue
        following = marks[i + 1][1] if i + 1 < len(marks) else None
        duration = (following - at).total_seconds() if following else (now - at).total_seconds()
        steps.append(TimelineStep(label, at, max(0.0, duration) if following else None, detail))
    return tuple(steps)


def _hint(signature: str | None) -> str | None:
    return signature_hint(signature) if signature else None


def _similar(ctx: Context, run_id: str) -> tuple[SimilarRun, ...]:
    """Earlier runs that failed the same way, as `eorch similar` finds them, with what changed since."""
    try:
        found = history_service.similar(ctx, run_id, limit=5)
    except EorchError:  # no root cause to compare
        return ()
    return tuple(SimilarRun(m.run.id, inert_line(m.run.name), m.run.status, m.run.created_at, inert_line(m.changed))
                 for m in found.similar)


def load_detail(ctx: Context, run_id: str, now: datetime, monitor_running: bool = True) -> RunDetail:
    row = on_screen(runs.get(ctx, run_id, monitor_running=monitor_running))
    events = [(e.ts, e.kind, e.data) for e in runs.events(ctx, row.id, kinds=("status", "phase_changed", "phase"))]
    cause = row.root_cause
    signature = row.signature or (cause or {}).get("signature")
    return RunDetail(
        row=row, hint=(cause or {}).get("hint") or _hint(signature), timeline=timeline(row, events, now),
        similar=_similar(ctx, row.id) if cause else (), steps=runs.steps(ctx, row.id),
    )


def load_hosts(ctx: Context) -> tuple[HostView, ...]:
    return tuple(hosts.list_hosts(ctx))


def save_host_check(ctx: Context, name: str, facts: dict[str, Any] | None, error: str | None) -> None:
    """Record a check the way `eorch host check` does (`services.hosts.record_check`)."""
    hosts.record_check(ctx, name, facts, error)


def load_alerts(ctx: Context, limit: int = 50) -> tuple[AlertRow, ...]:
    return tuple(AlertRow(inert_line(a.title), inert(a.body), a.kind, a.created_at, a.run_id, a.delivery,
                          a.delivery_detail) for a in alerts.recent(ctx, limit=limit))


async def check_host(ctx: Context, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """Check the host as `eorch host check` does (`services.hosts.check`, Slurm's facts on a Slurm login node):
    (facts, None) or (None, why it failed)."""
    return await hosts.try_check(ctx, name)


FILTER_KEYS = {"status": "status", "host": "host", "since": "since", "name": "name", "sig": "signature",
               "signature": "signature", "exc": "exception", "exception": "exception", "model": "model"}


def parse_history_query(text: str) -> tuple[dict[str, str], str]:
    """`status:failed host:gpu since:7d out of memory` → ({status, host, since}, "out of memory")."""
    filters: dict[str, str] = {}
    words: list[str] = []
    for token in text.split():
        key, sep, value = token.partition(":")
        if sep and value and key.lower() in FILTER_KEYS:
            filters[FILTER_KEYS[key.lower()]] = value
        else:
            words.append(token)
    return filters, " ".join(words)


@dataclass(frozen=True)
class HistoryResult:
    runs: tuple[RunView, ...]
    snippets: dict[str, str]
    note: str = ""


def search_history(ctx: Context, text: str, now: datetime, limit: int = 200) -> HistoryResult:
    """Filters over the history (`eorch runs`' filters), and full-text search over root causes for the free
    words (`eorch search`)."""
    from orchestrator.core.history import RunFilter, parse_since

    filters, words = parse_history_query(text)
    since = parse_since(filters["since"], now) if filters.get("since") else None
    flt = RunFilter(**{k: v for k, v in filters.items() if k != "since"}, since=since)
    if not words:
        return HistoryResult(tuple(on_screen(v) for v in runs.filtered(ctx, flt, limit=limit)), {})
    allowed = set(history_service.filtered_ids(ctx, flt)) if filters else None
    hits = [h for h in history_service.search(ctx, words, limit=limit) if allowed is None or h.run.id in allowed]
    return HistoryResult(tuple(on_screen(h.run) for h in hits), {h.run.id: h.snippet for h in hits},
                         "full-text search over root causes and names")
