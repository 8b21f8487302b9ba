"""`eorch runs` as a table that fits: a compact default, `--wide`, and plain aligned text for pipes.

On a terminal the table fits its width: the short id, status and numbers are never cut (`e0220…` cannot be
pasted into the next command), only the name and the cause give way with an ellipsis.  When stdout is not a
terminal nothing is cut at all: columns are aligned with spaces, header first (as `kubectl get` prints), so
`eorch runs > runs.txt` keeps every character.  The cells are plain text in both cases: a run name or a
cause is data, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.core.freshness import eta_text
from orchestrator.core.humanize import STATUS_STYLE, ago, run_time, short_span
from orchestrator.core.runstate import shown_phase
from orchestrator.logparse.inert import inert_line

if TYPE_CHECKING:
    from orchestrator.services.runview import RunView

ACTIVE = frozenset({"pending", "launching", "running"})
#: The least a flexible column (name, cause) is given before the table is allowed to overflow.
MIN_FLEXIBLE = 8


#: The names rich gives its colour systems (``Console.color_system`` is typed ``str``).
ColorSystem = Literal["auto", "standard", "256", "truecolor", "windows"]


@dataclass(frozen=True)
class Column:
    label: str
    key: str
    flexible: bool = False  # may be cut with an ellipsis on a narrow terminal


COMPACT = (Column("ID", "id"), Column("NAME", "name", True), Column("STATUS", "status"),
           Column("PROGRESS", "progress"), Column("AGE", "age"), Column("TIME", "time"),
           Column("CAUSE", "cause", True))
WIDE = (Column("ID", "id"), Column("NAME", "name", True), Column("HOST", "host"), Column("STATUS", "status"),
        Column("PHASE", "phase"), Column("PROGRESS", "progress"), Column("EXIT", "exit"),
        Column("STARTED", "started"), Column("AGE", "age"), Column("TIME", "time"),
        Column("CAUSE", "cause", True))


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.rstrip("Z")) if value else None


def progress_cell(record: dict[str, Any], now: datetime | None = None) -> str:
    """`54/64 ETA 4m19s` (shards) while loading, `120/200` for a recipe's samples; ETA only while active, counted
    down from the log's last output (with ``now``): `54/64 overdue 20m` once it has passed."""
    active = record["status"] in ACTIVE
    shards, progress = record.get("shards"), record.get("progress")
    if shards and (record.get("phase") == "loading" or not progress):
        text = f"{shards['done']}/{shards['total']}"
        eta = record.get("shards_eta_s")
        if active and eta is not None and shards["done"] < shards["total"]:
            text += f" {eta_text(eta, _parse(record.get('last_output_at')), now)}" if now else f" ETA {short_span(eta)}"
        return text
    if progress:
        return f"{progress['done']}/{progress['total']}"
    # No numbers yet: what the log says the run is doing (`loading`, `serving`), as `--wide`'s PHASE column.
    return shown_phase(record["status"], record.get("phase"), record.get("kind") or "command") or ""


def status_cell(record: dict[str, Any]) -> str:
    """`running`, or `running (as of 08:22)` when it could not be confirmed (orchestrator.cli.current)."""
    note = (record.get("freshness") or {}).get("note") or ""
    return f"{record['status']} ({note.split(',')[0]})" if note else record["status"]


def cause_cell(record: dict[str, Any]) -> str:
    """The root cause's signature or exception; for a failure without one, its first error line."""
    cause = record.get("root_cause") or {}
    first_error = (record.get("evidence") or {}).get("first_error_line")
    return str(cause.get("signature") or cause.get("exception") or first_error or "")


def cells(record: dict[str, Any], now: datetime) -> dict[str, str]:
    """Every column's text for one run record (`RunView.record` / `RunView.history_record`)."""
    created, started, ended = (_parse(record.get(k)) for k in ("created_at", "started_at", "ended_at"))
    values = {
        "id": record["id"], "name": record["name"] or "", "host": record["host"], "status": status_cell(record),
        "phase": shown_phase(record["status"], record.get("phase"), record.get("kind") or "command") or "",
        "progress": progress_cell(record, now),
        "exit": "" if record.get("exit_code") is None else str(record["exit_code"]),
        "started": started.strftime("%Y-%m-%d %H:%M") if started else "",
        "age": ago(created, now), "time": run_time(started, ended, now, active=record["status"] in ACTIVE),
        "cause": cause_cell(record),
    }
    # A name or a cause can carry a job's escape sequences: inert here, so pipes and widths get them too.
    return {k: inert_line(v) for k, v in values.items()}


def plain_lines(rows: Sequence[dict[str, str]], columns: Sequence[Column]) -> list[str]:
    """Aligned columns, header first, nothing cut: what a pipe or a file gets."""
    table = [[c.label for c in columns], *([row[c.key] for c in columns] for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]


def fitted_widths(rows: Sequence[dict[str, str]], columns: Sequence[Column], width: int) -> list[int]:
    """Column widths for a terminal ``width`` wide: fixed columns as wide as their longest cell; the
    flexible ones share what is left: the narrowest gets what it needs as long as the others keep
    ``MIN_FLEXIBLE`` each."""
    natural = [max([len(c.label), *(len(row[c.key]) for row in rows)]) for c in columns]
    room = width - 2 * (len(columns) - 1) - sum(w for w, c in zip(natural, columns) if not c.flexible)
    flexible = sorted((w, i) for i, (w, c) in enumerate(zip(natural, columns)) if c.flexible)
    widths = list(natural)
    for n, (want, i) in enumerate(flexible):
        others = len(flexible) - n - 1
        widths[i] = min(want, max(MIN_FLEXIBLE, room - MIN_FLEXIBLE * others))
        room -= widths[i]
    return widths


def rich_table(rows: Sequence[dict[str, str]], columns: Sequence[Column], width: int) -> Table:
    """The terminal's table: fixed columns never wrap or shrink; flexible ones end in an ellipsis."""
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    for c, w in zip(columns, fitted_widths(rows, columns, width)):
        table.add_column(c.label, no_wrap=True, overflow="ellipsis", width=w)
    for row in rows:
        table.add_row(*(Text(row[c.key], style=STATUS_STYLE.get(row[c.key].split()[0], "") if c.key == "status"
                             else "") for c in columns))
    return table


def print_runs(console: Console, records: Sequence[dict[str, Any]], now: datetime, *, wide: bool) -> None:
    columns = WIDE if wide else COMPACT
    rows = [cells(r, now) for r in records]
    if console.is_terminal:
        table = rich_table(rows, columns, console.width)
        needed = sum(c.width or 0 for c in table.columns) + 2 * (len(columns) - 1)
        if needed <= console.width:
            console.print(table)
        else:  # too wide (`--wide` on a narrow terminal): the terminal wraps the lines, nothing is cut
            wider = Console(file=console.file, width=needed, force_terminal=True, color_system=cast(ColorSystem | None, console.color_system))
            wider.print(table)
    else:
        for line in plain_lines(rows, columns):
            console.file.write(line + "\n")


def listing_records(views: Sequence[RunView]) -> list[dict[str, Any]]:
    """What `eorch runs` shows of each run, and prints with ``--json``."""
    return [{**v.history_record(), "freshness": v.freshness()} for v in views]


def print_listing(console: Console, err_console: Console, records: Sequence[dict[str, Any]], *, anything: bool,
                  wide: bool) -> None:
    """The runs table, then what is known of the staleness of the statuses it shows; or, when no run is
    shown, why (``anything``: whether the history holds a run at all)."""
    from orchestrator.core.clock import utcnow

    if not anything:
        err_console.print("no runs yet: start one with `eorch launch --host local -- echo hello` "
                          "(or `eorch host add NAME user@host` first)", highlight=False, markup=False)
        return
    if not records:
        err_console.print("no runs match these filters", highlight=False)
        return

    print_runs(console, records, utcnow(), wide=wide)
    for note in dict.fromkeys(r["freshness"]["note"].split(", ", 1)[1] for r in records if r["freshness"]["note"]):
        console.print(f"status as last checked: {note}", style="yellow", highlight=False, markup=False)
