"""The run history as a thing to query: filters, failure fingerprints, similar runs, search, stats, export, prune.

Reads go through SQLAlchemy Core/ORM expressions; the only SQL text is the FTS5 ``MATCH`` (a bound
parameter) against the ``runs_fts`` virtual table of migration 0002.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, func, or_, select, text
from sqlalchemy.orm import Session

from orchestrator.errors import UsageError
from orchestrator.secretenv import REDACTED, is_secret_key
from orchestrator.store.models import Alert, Event, Run
from orchestrator.store.queries import get_run, utcnow
from orchestrator.views import run_record

# --------------------------------------------------------------------------------------------- filters

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """`7d`, `12h`, `30m`, `2w`, or an ISO date/time (UTC) → the earliest creation time to keep."""
    now = now or utcnow()
    match = _SINCE.match(value)
    if match:
        try:
            return now - timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2).lower()])
        except (OverflowError, ValueError):
            raise UsageError(f"{value!r} is further back than any date; use at most a few thousand years "
                             "(e.g. 365d) or an ISO date") from None
    try:
        parsed = datetime.fromisoformat(value.strip().removesuffix("Z"))
    except ValueError as err:
        raise UsageError(f"cannot read {value!r} as a time: use 7d, 12h, 30m, 2w or an ISO date") from err
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


@dataclass(frozen=True)
class RunFilter:
    status: str | None = None
    host: str | None = None
    since: datetime | None = None
    name: str | None = None  # a glob: eagle3-*
    signature: str | None = None
    exception: str | None = None  # exact, or the last dotted part: OutOfMemoryError
    model: str | None = None  # exact path, or a glob
    vllm: str | None = None  # vllm version the run ran (env fingerprint)
    speculators: str | None = None
    patch_set: str | None = None  # name of the patch set the run was launched with

    def apply(self, stmt: Select[Any]) -> Select[Any]:
        if self.status:
            stmt = stmt.where(Run.status == self.status)
        if self.host:
            stmt = stmt.where(Run.host == self.host)
        if self.since:
            stmt = stmt.where(Run.created_at >= self.since)
        if self.name:
            stmt = stmt.where(Run.name.op("GLOB")(self.name))
        if self.signature:
            stmt = stmt.where(Run.signature == self.signature)
        if self.exception:
            stmt = stmt.where(or_(Run.exception == self.exception, Run.exception.like(f"%.{self.exception}")))
        if self.model:
            if any(c in self.model for c in "*?["):
                stmt = stmt.where(Run.model.op("GLOB")(self.model))
            else:
                stmt = stmt.where(Run.model == self.model)
        if self.vllm:
            stmt = stmt.where(Run.vllm_version == self.vllm)
        if self.speculators:
            stmt = stmt.where(Run.speculators_version == self.speculators)
        if self.patch_set:
            stmt = stmt.where(Run.patch_set["name"].as_string() == self.patch_set)
        return stmt


def filtered_runs(session: Session, flt: RunFilter, limit: int | None = 50) -> list[Run]:
    """Runs matching every filter, newest first."""
    stmt = flt.apply(select(Run)).order_by(Run.created_at.desc(), Run.id.desc())
    if limit:
        stmt = stmt.limit(limit)
    return list(session.scalars(stmt))


def history_record(run: Run) -> dict[str, Any]:
    """The run record plus the history columns (signature, exception, fingerprint, model, versions)."""
    record = run_record(run)
    record.update(model=run.model, signature=run.signature, exception=run.exception, fingerprint=run.fingerprint,
                  vllm_version=run.vllm_version, speculators_version=run.speculators_version)
    return record


# --------------------------------------------------------------------------------------------- fingerprint

_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE), "<uuid>"),
    (re.compile(r"0x[0-9a-f]+", re.IGNORECASE), "<hex>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[~.]?/[\w.@+-]+)+/?"), "<path>"),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.IGNORECASE), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
]
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in (\S+)', re.MULTILINE)
INNERMOST_FRAMES = 3


def normalise_message(message: str) -> str:
    """The message with paths, ids, hex addresses and numbers masked, so reruns of one bug compare equal."""
    for pattern, mask in _MASKS:
        message = pattern.sub(mask, message)
    return message.strip()


def failure_signature_text(root_cause: Mapping[str, Any]) -> str | None:
    """The normalised root cause: exception type | masked message | innermost frames' function names."""
    exception = root_cause.get("exception") or ""
    message = root_cause.get("message") or ""
    frames = _FRAME.findall(root_cause.get("traceback") or "")[-INNERMOST_FRAMES:]
    if not (exception or message or frames):
        return None
    return f"{exception}|{normalise_message(str(message))}|{'>'.join(frames)}"


def fingerprint_of(root_cause: Mapping[str, Any] | None) -> str | None:
    if not root_cause:
        return None
    normalised = failure_signature_text(root_cause)
    return hashlib.sha256(normalised.encode()).hexdigest()[:32] if normalised else None


def record_fingerprint(session: Session, run: Run) -> str | None:
    """Store the run's failure fingerprint (idempotent); None when it has no root cause."""
    print_ = fingerprint_of(run.root_cause)
    if print_ and run.fingerprint != print_:
        run.fingerprint = print_
    return print_


# ------------------------------------------------------------------------------------------------ similar

def _env_value(key: str, value: Any) -> Any:
    return REDACTED if is_secret_key(key) else value


def dict_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 redact: bool = False) -> dict[str, Any]:
    before, after = before or {}, after or {}
    show = _env_value if redact else (lambda _k, v: v)
    out: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out[key] = {"from": show(key, before.get(key)), "to": show(key, after.get(key))}
    return out


def run_changes(earlier: Run, later: Run) -> dict[str, Any]:
    """What differs between two runs: command, env vars (secrets redacted), patches, versions, code."""
    changes: dict[str, Any] = {}
    if earlier.command != later.command:
        changes["command"] = {"from": earlier.command, "to": later.command}
    for name in ("model", "vllm_version", "speculators_version", "host"):
        if getattr(earlier, name) != getattr(later, name):
            changes[name] = {"from": getattr(earlier, name), "to": getattr(later, name)}
    for name, redact in (("env", True), ("patch_set", False), ("env_fingerprint", False)):
        diff = dict_changes(getattr(earlier, name), getattr(later, name), redact=redact)
        if diff:
            changes[name] = diff
    return changes


def describe_changes(changes: Mapping[str, Any]) -> str:
    """`vllm_version: 0.16.0 → 0.17.1; env: VLLM_USE_V1 1→0` — what `run_changes` found, in one line."""
    return "; ".join(_describe_change(k, v) for k, v in changes.items()) or "nothing recorded"


def _describe_change(key: str, change: Any) -> str:
    if isinstance(change, dict) and set(change) == {"from", "to"}:
        before, after = change["from"], change["to"]
        if isinstance(before, list) or isinstance(after, list):
            return f"{key}: {' '.join(before or [])!r} → {' '.join(after or [])!r}"
        return f"{key}: {before} → {after}"
    return f"{key}: " + ", ".join(f"{k} {v['from']}→{v['to']}" for k, v in change.items())


def similar_runs(session: Session, ref: str, limit: int = 20) -> tuple[Run, list[dict[str, Any]]]:
    """Earlier runs with the same failure fingerprint, newest first, each with what changed since it."""
    run = get_run(session, ref)
    print_ = run.fingerprint or record_fingerprint(session, run)
    if not print_:
        raise UsageError(f"run {run.id} has no root cause to compare (status {run.status})")
    stmt = (select(Run).where(Run.fingerprint == print_, Run.id != run.id, Run.created_at <= run.created_at)
            .order_by(Run.created_at.desc()).limit(limit))
    return run, [{"run": history_record(r), "changes": run_changes(r, run)} for r in session.scalars(stmt)]


# ------------------------------------------------------------------------------------------------- search


def fts_query(words: str) -> str:
    """User text as an FTS5 query: each word a quoted term (so `-`, `:` and `.` are data), all required."""
    terms = [w.replace('"', '""') for w in words.split() if w.strip()]
    if not terms:
        raise UsageError("give some words to search for")
    return " ".join(f'"{t}"' for t in terms)


def search(session: Session, words: str, limit: int = 50) -> list[dict[str, Any]]:
    """Runs whose root cause (exception, message, traceback) or name contains all the words, best first."""
    rows = session.execute(
        text("SELECT run_id, snippet(runs_fts, -1, :open, :close, '…', 12) AS snip, bm25(runs_fts) AS rank "
             "FROM runs_fts WHERE runs_fts MATCH :q ORDER BY rank LIMIT :limit"),
        {"q": fts_query(words), "limit": limit, "open": _MATCH_OPEN, "close": _MATCH_CLOSE},
    ).all()
    runs = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_([row.run_id for row in rows])))}
    out = []
    for row in rows:
        run = runs.get(row.run_id)
        if run is not None:
            plain, spans = _unmark(row.snip)
            out.append({"run": history_record(run), "snippet": row.snip.replace(_MATCH_OPEN, "[").replace(
                _MATCH_CLOSE, "]"), "snippet_text": plain, "snippet_matches": spans})
    return out


# Marks around the matched words in an FTS snippet: characters no root cause text contains (it is made
# inert), so they tell a match from a bracket in the text.
_MATCH_OPEN, _MATCH_CLOSE = "\x02", "\x03"


def _unmark(snippet: str) -> tuple[str, list[list[int]]]:
    """The snippet without its match marks, and the [start, end) of each match in it."""
    plain: list[str] = []
    spans: list[list[int]] = []
    pos = 0
    for i, part in enumerate(snippet.replace(_MATCH_CLOSE, _MATCH_OPEN).split(_MATCH_OPEN)):
        if i % 2:
            spans.append([pos, pos + len(part)])
        plain.append(part)
        pos += len(part)
    return "".join(plain), spans


# -------------------------------------------------------------------------------------------------- stats


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def stats(session: Session, host: str | None = None, model: str | None = None, top: int = 5) -> dict[str, Any]:
    """Runs, success rate, median load and failure times, top failure signatures."""
    flt = RunFilter(host=host, model=model)
    by_status = dict(session.execute(flt.apply(select(Run.status, func.count())).group_by(Run.status)).all())
    finished = sum(n for s, n in by_status.items() if s in ("succeeded", "failed", "lost", "cancelled"))
    load_s = session.execute(
        flt.apply(select(Run.created_at, func.min(Alert.created_at)).join(Alert, Alert.run_id == Run.id))
        .where(Alert.kind == "loading_finished").group_by(Run.id)
    ).all()
    fail_s = session.execute(
        flt.apply(select(Run.started_at, Run.ended_at)).where(Run.status == "failed", Run.started_at.is_not(None),
                                                             Run.ended_at.is_not(None))
    ).all()
    signatures = session.execute(
        flt.apply(select(Run.signature, func.count().label("n"))).where(Run.signature.is_not(None))
        .group_by(Run.signature).order_by(func.count().desc()).limit(top)
    ).all()
    return {
        "filters": {"host": host, "model": model},
        "runs": sum(by_status.values()),
        "by_status": by_status,
        "success_rate": round(by_status.get("succeeded", 0) / finished, 4) if finished else None,
        "median_load_s": _median([(b - a).total_seconds() for a, b in load_s]),
        "median_time_to_failure_s": _median([(b - a).total_seconds() for a, b in fail_s]),
        "top_signatures": [{"signature": s, "runs": n} for s, n in signatures],
    }


# ------------------------------------------------------------------------------------------ export, prune

EVENT_COLUMNS = ("id", "run_id", "ts", "kind", "line_no", "data")
EXPORT_BATCH = 5000


def export_runs(session: Session, flt: RunFilter | None = None) -> Iterator[dict[str, Any]]:
    stmt = (flt or RunFilter()).apply(select(Run)).order_by(Run.created_at, Run.id)
    for run in session.scalars(stmt.execution_options(yield_per=EXPORT_BATCH)):
        yield history_record(run)


def export_events(session: Session, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    stmt = select(Event.id, Event.run_id, Event.ts, Event.kind, Event.line_no, Event.data).order_by(Event.id)
    if since:
        stmt = stmt.where(Event.ts >= since)
    for row in session.execute(stmt.execution_options(yield_per=EXPORT_BATCH)):
        yield dict(zip(EVENT_COLUMNS, (row.id, row.run_id, row.ts.isoformat() + "Z", row.kind, row.line_no,
                                       row.data), strict=True))


def count_events_before(session: Session, before: datetime) -> int:
    return int(session.scalar(select(func.count()).select_from(Event).where(Event.ts < before)) or 0)


def prune_events(session: Session, before: datetime) -> int:
    """Delete events older than ``before`` (runs and alerts are kept); the number deleted."""
    result = session.execute(delete(Event).where(Event.ts < before))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
