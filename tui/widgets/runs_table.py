"""A table of runs: name, host, status, phase, shard/progress bar with ETA, age, root-cause signature.

The columns follow the table's width, re-laid out whenever it is resized: under 110 columns the host goes (it
is in the detail), the rest narrows and times take one unit (`17m`, not `17m43` cut from `17m43s`), so 80×24
shows the whole short id (the next command needs it) and every number whole; from 140 columns, when a shown run is a
Slurm job, a `slurm` column shows its job id, state code and pending reason or node.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.text import Text
from textual.events import Resize
from textual.widgets import DataTable

from orchestrator.services.runview import RunView
from tui.format import age, progress_cell, slurm_cell, status_text

Columns = tuple[tuple[str, int], ...]

COLUMNS: Columns = (("id", 8), ("name", 18), ("host", 8), ("status", 9), ("phase", 8), ("progress", 20),
                    ("age", 6), ("root cause", 24))
NARROW_COLUMNS: Columns = (("id", 8), ("name", 15), ("status", 9), ("phase", 7), ("progress", 11),
                           ("age", 4), ("root cause", 10))
SLURM_COLUMNS: Columns = (*COLUMNS[:4], ("slurm", 18), *COLUMNS[4:])
NARROW_BELOW = 110
SLURM_FROM = 140


def layout(width: int, slurm: bool) -> Columns:
    """The columns for a table this wide; the Slurm column only when some run needs it and there is room."""
    if width < NARROW_BELOW:
        return NARROW_COLUMNS
    return SLURM_COLUMNS if slurm and width >= SLURM_FROM else COLUMNS


class RunsTable(DataTable[object]):
    """Rows keyed by run id; rebuilt only when what it shows changed, keeping the cursor on its run."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.columns_shown: Columns = ()
        self._runs: tuple[RunView, ...] = ()
        self._now: datetime | None = None
        self._shown: tuple[tuple[object, ...], ...] = ()

    @property
    def narrow(self) -> bool:
        return self.columns_shown == NARROW_COLUMNS

    def on_mount(self) -> None:
        self._relayout()

    def on_resize(self, event: Resize) -> None:
        self._relayout()

    def _relayout(self) -> None:
        """Switch columns if the width (or the need for a Slurm column) asks for others; rows keep their run."""
        wanted = layout(self.size.width or self.app.size.width, any(r.slurm_job for r in self._runs))
        if wanted == self.columns_shown:
            return
        selected = self.selected_run_id
        self.clear(columns=True)
        self.columns_shown = wanted
        for label, width in wanted:
            self.add_column(label, key=label, width=width)
        self._shown = ()
        if self._now is not None:
            self._fill(selected)

    def cells(self, run: RunView, now: datetime) -> tuple[object, ...]:
        values: dict[str, object] = {
            "id": run.id, "name": run.name, "host": run.host,
            "status": status_text(run.status + ("?" if run.stale_note else "")),
            "slurm": slurm_cell(run), "phase": run.phase,
            "progress": progress_cell(run, width=0 if self.narrow else 8, now=now),
            "age": age(run.created_at, now, narrow=self.narrow),
            "root cause": Text(run.cause, style="red") if run.cause else "",
        }
        return tuple(values[label] for label, _width in self.columns_shown)

    @property
    def selected_run_id(self) -> str | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    def show(self, runs: Sequence[RunView], now: datetime) -> None:
        self._runs, self._now = tuple(runs), now
        if not self.columns_shown:
            return  # not mounted yet: on_mount lays out and fills
        selected = self.selected_run_id
        self._relayout()
        self._fill(selected)

    def _fill(self, selected: str | None) -> None:
        assert self._now is not None
        rows = tuple((run.id, *self.cells(run, self._now)) for run in self._runs)
        if rows == self._shown:
            return
        self._shown = rows
        self.clear()
        for row in rows:
            self.add_row(*row[1:], key=str(row[0]))
        if selected is not None:
            for index, row in enumerate(rows):
                if row[0] == selected:
                    self.move_cursor(row=index, animate=False)
                    break
