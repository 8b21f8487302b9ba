"""The history's queries: filtered runs, similar runs, full-text search, stats, export, prune.

Each returns rows or plain values over a Session; `orchestrator.services.history` turns them into views.
Reads go through SQLAlchemy Core/ORM expressions; the only SQL text is the FTS5 ``MATCH`` (a bound
parameter) against the ``runs_fts`` virtual table of migration 0002.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVarTuple

from sqlalchemy import Select, delete, func, or_, select, text
from sqlalchemy.orm import Session

from orchestrator.core.history import MATCH_CLOSE, MATCH_OPEN, RunFilter, fts_query
from orchestrator.core.humanize import iso
from orchestrator.store.models import Alert, Event, Run

#: The column types of a statement that a filter narrows (it keeps them).
Cols = TypeVarTuple("Cols")


def apply_filter(flt: RunFilter, stmt: Select[*Cols]) -> Select[*Cols]:
    """``stmt`` narrowed to the runs matching every filter set in ``flt``."""
    if flt.status:
        stmt = stmt.where(Run.status == flt.status)
    if flt.host:
        stmt = stmt.where(Run.host == flt.host)
    if flt.since:
        stmt = stmt.where(Run.created_at >= flt.since)
    if flt.name:
        stmt = stmt.where(Run.name.op("GLOB")(flt.name))
    if flt.signature:
        stmt = stmt.where(Run.signature == flt.signature)
    if flt.exception:
        stmt = stmt.where(or_(Run.exception == flt.exception, Run.exception.like(f"%.{flt.exception}")))
    if flt.model:
        if any(c in flt.model for c in "*?["):
            stmt = stmt.where(Run.model.op("GLOB")(flt.model))
        else:
            stmt = stmt.where(Run.model == flt.model)
    if flt.vllm:
        stmt = stmt.where(Run.vllm_version == flt.vllm)
    if flt.speculators:
        stmt = stmt.where(Run.speculators_version == flt.speculators)
    if flt.patch_set:
        stmt = stmt.where(Run.patch_set["name"].as_string() == flt.patch_set)
    return stmt


def filtered_runs(session: Session, flt: RunFilter, limit: int | None = 50) -> list[Run]:
    """Runs matching every filter, newest first."""
    stmt = apply_filter(flt, select(Run)).order_by(Run.created_at.desc(), Run.id.desc())
    if limit:
        stmt = stmt.limit(limit)
    return list(session.scalars(stmt))


def earlier_with_fingerprint(session: Session, run: Run, fingerprint: str, limit: int = 20) -> list[Run]:
    """Runs created no later than ``run`` with the same failure fingerprint, newest first."""
    stmt = (select(Run).where(Run.fingerprint == fingerprint, Run.id != run.id, Run.created_at <= run.created_at)
            .order_by(Run.created_at.desc()).limit(limit))
    return list(session.scalars(stmt))


def search(session: Session, words: str, limit: int = 50) -> list[tuple[Run, str]]:
    """Runs whose root cause (exception, message, traceback) or name contains all the words, best first, each
    with its FTS snippet (the matches between `MATCH_OPEN` and `MATCH_CLOSE`)."""
    rows = session.execute(
        text("SELECT run_id, snippet(runs_fts, -1, :open, :close, '…', 12) AS snip, bm25(runs_fts) AS rank "
             "FROM runs_fts WHERE runs_fts MATCH :q ORDER BY rank LIMIT :limit"),
        {"q": fts_query(words), "limit": limit, "open": MATCH_OPEN, "close": MATCH_CLOSE},
    ).all()
    runs = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_([row.run_id for row in rows])))}
    return [(runs[row.run_id], str(row.snip)) for row in rows if row.run_id in runs]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def stats(session: Session, host: str | None = None, model: str | None = None, top: int = 5) -> dict[str, Any]:
    """Runs, success rate, median load and failure times, top failure signatures."""
    flt = RunFilter(host=host, model=model)
    by_status = dict(session.execute(apply_filter(flt, select(Run.status, func.count())).group_by(Run.status)).all())
    finished = sum(n for s, n in by_status.items() if s in ("succeeded", "failed", "lost", "cancelled"))
    load_s = session.execute(
        apply_filter(flt, select(Run.created_at, func.min(Alert.created_at)).join(Alert, Alert.run_id == Run.id))
        .where(Alert.kind == "loading_finished").group_by(Run.id)
    ).all()
    fail_s = session.execute(
        apply_filter(flt, select(Run.started_at, Run.ended_at)).where(
            Run.status == "failed", Run.started_at.is_not(None), Run.ended_at.is_not(None))
    ).all()
    signatures = session.execute(
        apply_filter(flt, select(Run.signature, func.count().label("n"))).where(Run.signature.is_not(None))
        .group_by(Run.signature).order_by(func.count().desc()).limit(top)
    ).all()
    return {
        "filters": {"host": host, "model": model},
        "runs": sum(by_status.values()),
        "by_status": by_status,
        "success_rate": round(by_status.get("succeeded", 0) / finished, 4) if finished else None,
        "median_load_s": _median([(b - a).total_seconds() for a, b in load_s]),
        "median_time_to_failure_s": _median([(b - a).total_seconds() for a, b in fail_s if a and b]),
        "top_signatures": [{"signature": s, "runs": n} for s, n in signatures],
    }


EVENT_COLUMNS = ("id", "run_id", "ts", "kind", "line_no", "data")
EXPORT_BATCH = 5000


def export_runs(session: Session, flt: RunFilter | None = None) -> Iterator[Run]:
    """Every run matching ``flt``, oldest first, read in batches."""
    stmt = apply_filter(flt or RunFilter(), select(Run)).order_by(Run.created_at, Run.id)
    yield from session.scalars(stmt.execution_options(yield_per=EXPORT_BATCH))


def export_events(session: Session, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    stmt = select(Event.id, Event.run_id, Event.ts, Event.kind, Event.line_no, Event.data).order_by(Event.id)
    if since:
        stmt = stmt.where(Event.ts >= since)
    for row in session.execute(stmt.execution_options(yield_per=EXPORT_BATCH)):
        yield dict(zip(EVENT_COLUMNS, (row.id, row.run_id, iso(row.ts, "auto"), row.kind, row.line_no,
                                       row.data), strict=True))


def count_events_before(session: Session, before: datetime) -> int:
    return int(session.scalar(select(func.count()).select_from(Event).where(Event.ts < before)) or 0)


def prune_events(session: Session, before: datetime) -> int:
    """Delete events older than ``before`` (runs and alerts are kept); the number deleted."""
    result = session.execute(delete(Event).where(Event.ts < before))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
