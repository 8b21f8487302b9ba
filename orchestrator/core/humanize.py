"""Values as people read them: compact durations (``55s``, ``7m05s``, ``3h12m``), ages (``3m ago``), the ISO
stamps of ``--json``, the colour of each run status, and an earlier try of a job's log in a line.

One module for the CLI and the TUI, so a duration, a time stamp or a status reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import groupby
from typing import Any

from orchestrator.logparse.events import name_shown

#: The colour (a rich style) of each run status, in `eorch runs`, `eorch show` and every TUI screen.
STATUS_STYLE: dict[str, str] = {
    "pending": "dim", "launching": "cyan", "running": "bold cyan", "succeeded": "green",
    "failed": "bold red", "cancelled": "yellow", "lost": "magenta",
}


def iso(value: datetime | None, timespec: str = "seconds") -> str | None:
    """A naive UTC time as ``--json`` writes it: ``2026-12-01T08:22:05Z`` (``timespec="milliseconds"`` for
    alerts and deliveries, which happen many to a second); None stays None."""
    return value.isoformat(timespec=timespec) + "Z" if value is not None else None


def span(seconds: float | None) -> str:
    """A compact duration: 42s, 7m05s, 3h12m, 2d04h; ``—`` when unknown."""
    if seconds is None:
        return "—"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def short_span(seconds: float) -> str:
    """Like span, without the seconds once they no longer matter (10 minutes to an hour): ``11m``."""
    return f"{int(seconds) // 60}m" if 600 <= seconds < 3600 else span(seconds)


def coarse(seconds: float) -> str:
    """One unit, for narrow cells: 42s, 17m, 3h, 2d (never a number cut into another)."""
    s = int(max(0, seconds))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def ago(when: datetime | None, now: datetime) -> str:
    """How long ago: ``just now``, ``42s ago``, ``3m ago``, ``5h ago``, ``2d ago``; older than 30 days the date."""
    if when is None:
        return "—"
    s = (now - when).total_seconds()
    if s < 5:
        return "just now"
    if s < 60:
        return f"{int(s)}s ago"
    if s < 3600:
        return f"{int(s // 60)}m ago"
    if s < 86400:
        return f"{int(s // 3600)}h ago"
    if s < 30 * 86400:
        return f"{int(s // 86400)}d ago"
    return when.strftime("%Y-%m-%d")


def run_time(started: datetime | None, ended: datetime | None, now: datetime, *, active: bool) -> str:
    """``ran 55s`` for an ended run, ``running 15m`` for an active one, ``—`` before it started."""
    if started is None:
        return "—"
    if ended is not None:
        return f"ran {short_span((ended - started).total_seconds())}"
    return f"running {short_span((now - started).total_seconds())}" if active else "—"


def tries_in_log(earlier: Sequence[dict[str, Any]]) -> int:
    """How many tries a job's log holds, given the ``earlier_runs`` before its last one (the earliest of many
    are not listed: the last one listed says its number)."""
    return int(earlier[-1].get("try") or len(earlier)) + 1 if earlier else 1


def tries_where(first: int, last: int, total: int, first_line: object, last_line: object) -> str:
    """Where tries ``first``-``last`` of a log's ``total`` are (``try 1 of 2 (lines 1-296)``), for a line that
    says how they ended: ``tries 3-17 of 18 (lines 300-4120), each`` when they ended alike."""
    if first == last:
        return f"try {first} of {total} (lines {first_line}-{last_line})"
    return f"tries {first}-{last} of {total} (lines {first_line}-{last_line}), each"


def earlier_tries(earlier: Sequence[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """The tries before the last in a job's log, as ``earlier_try`` gives them, numbered as in the whole log, and
    whether they failed; tries in a row that ended alike are one line (a restart policy's crash loop)."""
    total = tries_in_log(earlier)
    rows = [(int(e.get("try") or n), e, earlier_try(int(e.get("try") or n), total, e)[1])
            for n, e in enumerate(earlier, 1)]
    out: list[tuple[str, str, bool]] = []
    for said, same in groupby(rows, key=lambda row: row[2]):
        run = list(same)
        (n, first, _), (m, last, _) = run[0], run[-1]
        out.append((tries_where(n, m, total, first.get("first_line"), last.get("last_line")), said,
                    bool(first.get("failed"))))
    return out


def earlier_try(n: int, total: int, e: dict[str, Any]) -> tuple[str, str]:
    """One try before the last in a job's log (an ``earlier_runs`` item), as (``try 1 of 2 (lines 1-296)``,
    ``FAILED: TypeError: …``): the second part's first line only, for a line of `show` and of the TUI."""
    rc = e.get("root_cause") or {}
    phase = e.get("phase")
    said = "FAILED" if e.get("failed") else ("stopped" if phase in ("stopped", "failed") else f"ended while {phase}")
    if rc:
        said += f": {name_shown(rc)}: {str(rc.get('message') or '').split(chr(10))[0]}"
    return tries_where(n, n, total, e.get("first_line"), e.get("last_line")), said
