"""The run history as the CLI and the TUI learn from it: similar runs, full-text search, stats, export, prune.

One implementation each: `eorch similar` and the TUI's run detail both call `similar`; `eorch search` and the
TUI's history screen both call `search`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.context import Context
from orchestrator.core import history
from orchestrator.core.history import MATCH_CLOSE, MATCH_OPEN, RunFilter
from orchestrator.errors import UsageError
from orchestrator.services.runview import RunView, view_of
from orchestrator.store import history as store
from orchestrator.store import queries

EVENT_COLUMNS = store.EVENT_COLUMNS


@dataclass(frozen=True, slots=True)
class SimilarRun:
    """An earlier run that failed the same way, and what changed between it and the run asked about."""

    run: RunView
    changes: dict[str, Any]

    @property
    def changed(self) -> str:
        """`vllm_version: 0.16.0 → 0.17.1; env: VLLM_USE_V1 1→0` (`history.describe_changes`)."""
        return history.describe_changes(self.changes)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run.history_record(), "changes": self.changes}


@dataclass(frozen=True, slots=True)
class SimilarRuns:
    run: RunView
    similar: tuple[SimilarRun, ...]

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run.history_record(), "similar": [m.to_json() for m in self.similar]}


def similar(ctx: Context, ref: str, limit: int = 20) -> SimilarRuns:
    """Earlier runs with the same failure fingerprint, newest first, each with what changed since it.

    UsageError when the run has no root cause to compare. The fingerprint is recorded on the run when it was
    not yet (runs that failed before fingerprints were kept).
    """
    with ctx.db() as s:
        run = queries.get_run(s, ref)
        print_ = run.fingerprint or history.record_fingerprint(run)
        if not print_:
            raise UsageError(f"run {run.id} has no root cause to compare (status {run.status})")
        matches = store.earlier_with_fingerprint(s, run, print_, limit=limit)
        return SimilarRuns(view_of(run), tuple(SimilarRun(view_of(m), history.run_changes(m, run))
                                               for m in matches))


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A run found by full-text search, with the snippet of its root cause around the matched words."""

    run: RunView
    snippet_marked: str  # the matches between MATCH_OPEN and MATCH_CLOSE

    @property
    def snippet(self) -> str:
        """The snippet with each match in [brackets]."""
        return self.snippet_marked.replace(MATCH_OPEN, "[").replace(MATCH_CLOSE, "]")

    def to_json(self) -> dict[str, Any]:
        plain, spans = history.unmark(self.snippet_marked)
        return {"run": self.run.history_record(), "snippet": self.snippet, "snippet_text": plain,
                "snippet_matches": spans}


def search(ctx: Context, words: str, limit: int = 50) -> list[SearchHit]:
    """Runs whose root cause (exception, message, traceback) or name contains all the words, best first."""
    with ctx.db() as s:
        return [SearchHit(view_of(run), snip) for run, snip in store.search(s, words, limit=limit)]


def filtered_ids(ctx: Context, flt: RunFilter, limit: int | None = None) -> list[str]:
    with ctx.db() as s:
        return [r.id for r in store.filtered_runs(s, flt, limit=limit)]


def stats(ctx: Context, host: str | None = None, model: str | None = None) -> dict[str, Any]:
    """Runs, success rate, median load time, median time to failure, top failure signatures."""
    with ctx.db() as s:
        return store.stats(s, host=host, model=model)


def export_runs(ctx: Context, flt: RunFilter | None = None) -> Iterator[dict[str, Any]]:
    """Every run as `history_record`, oldest first, read in batches (the session stays open while iterated)."""
    with ctx.db() as s:
        for run in store.export_runs(s, flt):
            yield view_of(run).history_record()


def export_events(ctx: Context, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    with ctx.db() as s:
        yield from store.export_events(s, since)


def count_events_before(ctx: Context, before: datetime) -> int:
    with ctx.db() as s:
        return store.count_events_before(s, before)


def prune_events(ctx: Context, before: datetime) -> int:
    """Delete events older than ``before`` (runs and alerts are kept); the number deleted."""
    with ctx.db() as s:
        return store.prune_events(s, before)
