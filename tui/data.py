"""What the screens show, read from the history as frozen values (no Textual here).

Every function takes the Context and returns plain values, so thread workers can call them and post the
result; nothing here keeps a SQLAlchemy object alive past its session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from orchestrator.context import Context
from orchestrator.errors import EorchError
from orchestrator.freshness import status_note
from orchestrator.logparse import signature_hint
from orchestrator.logparse.inert import inert, inert_line
from orchestrator.logparse.tail import failure_evidence
from orchestrator.recipesteps import StepLine, recipe_steps
from orchestrator.runstate import RunStatus, shown_phase
from orchestrator.secretenv import redacted_env
from orchestrator.store import queries
from orchestrator.store.models import Alert, Host, Run
from orchestrator.views import EVIDENCE_STATUSES

Clock = Callable[[], datetime]

# Log phases as the timeline names them.
PHASE_LABELS = {
    "starting": "launch", "loading": "loading", "loaded": "loaded", "serving": "ready",
    "running": "running", "stopped": "end", "failed": "end",
}
TIMELINE_ORDER = ("launch", "loading", "loaded", "ready", "running", "end")


@dataclass(frozen=True)
class RunRow:
    id: str
    name: str
    host: str
    status: str
    phase: str
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    shards_done: int | None = None
    shards_total: int | None = None
    shards_rate: float | None = None
    shards_eta_s: float | None = None
    progress_done: int | None = None
    progress_total: int | None = None
    progress_rate: float | None = None
    cause: str = ""
    # Slurm runs: the job id and what squeue said last (state, pending reason, node); "" otherwise.
    slurm_job: str = ""
    slurm_state: str = ""
    slurm_reason: str = ""
    slurm_node: str = ""
    # When the job last wrote output (the stall clock) and its status was last confirmed; a note such as
    # "as of 08:22, no monitor running; gpu unreachable" when the status could not be confirmed since.
    last_output_at: datetime | None = None
    checked_at: datetime | None = None
    stale_note: str = ""

    @property
    def terminal(self) -> bool:
        return RunStatus(self.status).is_terminal()

    def matches(self, text: str) -> bool:
        """Case-insensitive substring match over what the runs table shows."""
        needle = text.strip().lower()
        if not needle:
            return True
        hay = f"{self.id} {self.name} {self.host} {self.status} {self.phase} {self.cause} {self.slurm_job}".lower()
        return all(word in hay for word in needle.split())


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
    row: RunRow
    command: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None
    remote_dir: str | None
    log_offset: int
    cancel_requested: bool
    env_fingerprint: dict[str, Any] | None
    root_cause: dict[str, Any] | None
    hint: str | None
    timeline: tuple[TimelineStep, ...]
    similar: tuple[SimilarRun, ...] = ()
    evidence: dict[str, Any] | None = None  # a failure's first error line and log tail (views.run_record)
    preflight: dict[str, Any] | None = None  # the launch's preflight report (runs.preflight)
    steps: tuple[StepLine, ...] = ()  # the recipe's steps, for recipe runs
    outputs: dict[str, Any] | None = None  # the recipe's outputs: dir, samples, verified, bytes

    @property
    def log_path(self) -> str | None:
        return f"{self.remote_dir}/log" if self.remote_dir else None


@dataclass(frozen=True)
class HostRow:
    name: str
    destination: str
    reachable: bool | None
    unreachable_since: datetime | None
    last_error: str | None
    facts: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AlertRow:
    title: str
    body: str
    kind: str
    created_at: datetime
    run_id: str | None = None
    delivery: str = ""  # recorded alerts: sent / pending / failed / expired / none (orchestrator.alertoutbox)
    delivery_detail: str = ""  # one line per channel


def run_row(run: Run, host: Host | None = None, monitor_running: bool = True) -> RunRow:
    cause = run.signature or run.exception or (run.root_cause or {}).get("exception") or ""
    slurm = run.scheduler_state or {}
    note = status_note(run.status, checked_at=run.checked_at, created_at=run.created_at, host=run.host,
                       host_reachable=host.reachable if host else None, host_error=host.last_error if host else None,
                       monitor_running=monitor_running)
    return RunRow(
        id=run.id, name=inert_line(run.name), host=inert_line(run.host), status=run.status,
        phase=inert_line(shown_phase(run.status, run.phase, run.kind) or ""),
        created_at=run.created_at, started_at=run.started_at, ended_at=run.ended_at, exit_code=run.exit_code,
        shards_done=run.shards_done, shards_total=run.shards_total, shards_rate=run.shards_rate,
        shards_eta_s=run.shards_eta_s, progress_done=run.progress_done, progress_total=run.progress_total,
        progress_rate=run.progress_rate, cause=inert_line(str(cause)), slurm_job=run.scheduler_job_id or "",
        slurm_state=str(slurm.get("state") or ""), slurm_reason=str(slurm.get("reason") or ""),
        slurm_node=str(slurm.get("node") or ""), last_output_at=run.last_output_at, checked_at=run.checked_at,
        stale_note=note,
    )


def load_runs(ctx: Context, limit: int = 200, monitor_running: bool = True) -> tuple[RunRow, ...]:
    """Newest first; ``monitor_running`` says whether some process follows the runs (for the "as of" note)."""
    with ctx.db() as s:
        hosts = {h.name: h for h in queries.list_hosts(s)}
        return tuple(run_row(r, hosts.get(r.host), monitor_running) for r in queries.list_runs(s, limit=limit))


def timeline(row: RunRow, events: Sequence[tuple[datetime, str, dict[str, Any]]], now: datetime) -> tuple[
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


def _similar(session: Any, run: Run) -> tuple[SimilarRun, ...]:
    """Earlier runs that failed the same way, as `eorch similar` finds them, with what changed since."""
    from orchestrator import history

    try:
        _run, matches = history.similar_runs(session, run.id, limit=5)
    except EorchError:  # no root cause to compare
        return ()
    return tuple(SimilarRun(m["run"]["id"], inert_line(m["run"]["name"]), m["run"]["status"],
                            datetime.fromisoformat(m["run"]["created_at"].rstrip("Z")),
                            inert_line(history.describe_changes(m["changes"]))) for m in matches)


def _inert_values(record: dict[str, Any]) -> dict[str, Any]:
    """A job's strings (root cause, traceback) for the screen: no escape sequence reaches the terminal."""
    return {k: inert(v) if isinstance(v, str) else v for k, v in record.items()}


def load_detail(ctx: Context, run_id: str, now: datetime, monitor_running: bool = True) -> RunDetail:
    with ctx.db() as s:
        run = queries.get_run(s, run_id)
        row = run_row(run, s.get(Host, run.host), monitor_running)
        events = [(e.ts, e.kind, dict(e.data or {}))
                  for e in queries.events_of(s, run.id, kinds=("status", "phase_changed", "phase", "step_step"))]
        steps = recipe_steps(data for _ts, kind, data in events if kind == "step_step")
        cause = _inert_values(run.root_cause) if run.root_cause else None
        signature = run.signature or (cause or {}).get("signature")
        similar = _similar(s, run) if cause else ()
        return RunDetail(
            row=row, command=tuple(inert_line(a) for a in run.command or ()), env=redacted_env(run.env), cwd=run.cwd,
            remote_dir=run.remote_dir, log_offset=run.log_offset or 0, cancel_requested=run.cancel_requested,
            env_fingerprint=dict(run.env_fingerprint) if run.env_fingerprint else None, root_cause=cause,
            hint=(cause or {}).get("hint") or _hint(signature), timeline=timeline(row, events, now),
            similar=similar,
            evidence=failure_evidence(run.parser_state) if run.status in EVIDENCE_STATUSES else None,
            preflight=dict(run.preflight) if run.preflight else None,
            steps=steps, outputs=dict(run.outputs) if run.outputs else None,
        )


def load_hosts(ctx: Context) -> tuple[HostRow, ...]:
    with ctx.db() as s:
        return tuple(
            HostRow(h.name, h.destination, h.reachable, h.unreachable_since, h.last_error,
                    dict(h.facts) if h.facts else None)
            for h in queries.list_hosts(s)
        )


def save_host_check(ctx: Context, name: str, facts: dict[str, Any] | None, error: str | None) -> None:
    """Record a check the way `eorch host check` does: facts and reachability."""
    with ctx.db() as s:
        if facts is not None:
            host = s.get(Host, name)
            if host is not None:
                host.facts = facts
        queries.set_reachability(s, name, facts is not None, error)


def load_alerts(ctx: Context, limit: int = 50) -> tuple[AlertRow, ...]:
    from orchestrator import alertoutbox

    with ctx.db() as s:
        rows = list(s.scalars(select(Alert).order_by(Alert.created_at.desc(), Alert.id.desc()).limit(limit)))
        deliveries = alertoutbox.deliveries_of(s, [a.id for a in rows])
    return tuple(AlertRow(inert_line(a.title), inert(a.body), a.kind, a.created_at, a.run_id,
                          alertoutbox.overall_state(deliveries[a.id]),
                          "\n".join(alertoutbox.describe(d) for d in deliveries[a.id]))
                 for a in rows)


async def check_host(ctx: Context, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """Run `host check` through the host's session: (facts, None) or (None, why it failed)."""
    try:
        session = await ctx.session(name)
        return await session.call("check", root=session.root), None
    except (EorchError, OSError) as err:
        await ctx.drop_session(name)
        return None, str(err)


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
    runs: tuple[RunRow, ...]
    snippets: dict[str, str]
    note: str = ""


def search_history(ctx: Context, text: str, now: datetime, limit: int = 200) -> HistoryResult:
    """Filters through orchestrator.history (full-text search over root causes for the free words);
    without that module, the same filters over the runs table and a substring match."""
    filters, words = parse_history_query(text)
    try:
        from orchestrator import history
    except ImportError:
        history = None  # type: ignore[assignment]
    with ctx.db() as s:
        if history is None:
            rows = [run_row(r) for r in queries.list_runs(s, status=filters.get("status"),
                                                          host=filters.get("host"), limit=limit)]
            return HistoryResult(tuple(r for r in rows if r.matches(words)), {},
                                 "history module not installed: plain filters")
        since = history.parse_since(filters["since"], now) if filters.get("since") else None
        flt = history.RunFilter(**{k: v for k, v in filters.items() if k != "since"}, since=since)
        if not words:
            return HistoryResult(tuple(run_row(r) for r in history.filtered_runs(s, flt, limit=limit)), {})
        allowed = {r.id for r in history.filtered_runs(s, flt, limit=None)} if filters else None
        hits = history.search(s, words, limit=limit)
        ids = [h["run"]["id"] for h in hits if allowed is None or h["run"]["id"] in allowed]
        runs = {r.id: r for r in s.scalars(select(Run).where(Run.id.in_(ids)))}
        snippets = {h["run"]["id"]: str(h.get("snippet") or "") for h in hits}
        return HistoryResult(tuple(run_row(runs[i]) for i in ids if i in runs),
                             {i: snippets[i] for i in ids}, "full-text search over root causes and names")
