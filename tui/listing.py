"""Which runs the runs screen shows, in which order: the filter words, a status filter and a sort (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from orchestrator.core.runstate import RunStatus
from orchestrator.services.runview import RunView

#: The status filters `f` cycles through: all, the active ones, then each end state.
STATUS_FILTERS: tuple[str, ...] = ("all", "active", "failed", "lost", "cancelled", "succeeded")
_EPOCH = datetime(1970, 1, 1)
#: The orders `o` cycles through, each a key over a run (newest first is the history's own order).
SORTS: dict[str, Callable[[RunView], Any]] = {
    "newest": lambda r: (-(r.created_at - _EPOCH).total_seconds(), r.id),
    "status": lambda r: (RunStatus(r.status).is_terminal(), r.status, -(r.created_at - _EPOCH).total_seconds()),
    "name": lambda r: (r.name.lower(), -(r.created_at - _EPOCH).total_seconds()),
    "host": lambda r: (r.host, -(r.created_at - _EPOCH).total_seconds()),
}


def next_of(options: Sequence[str], current: str) -> str:
    return options[(list(options).index(current) + 1) % len(options)]


def keeps(run: RunView, status_filter: str) -> bool:
    if status_filter == "all":
        return True
    if status_filter == "active":
        return not run.terminal
    return run.status == status_filter


def select_runs(runs: Sequence[RunView], *, text: str = "", status_filter: str = "all",
                sort: str = "newest") -> list[RunView]:
    """The runs matching the filter words and the status filter, in the chosen order."""
    return sorted((r for r in runs if r.matches(text) and keeps(r, status_filter)), key=SORTS[sort])
