"""A table of runs: name, host, status, phase, shard/progress bar with ETA, age, root-cause signature."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.text import Text
from textual.widgets import DataTable

from tui.data import RunRow
from tui.format import age, progress_cell, status_text

COLUMNS = (("id", 8), ("name", 18), ("host", 8), ("status", 9), ("phase", 8), ("progress", 20),
           ("age", 6), ("root cause", 24))
# Under 110 columns the id goes (it is in the detail) and the rest narrows, so 80×24 shows every column.
NARROW_COLUMNS = (("name", 14), ("host", 6), ("status", 9), ("phase", 7), ("progress", 14), ("age", 5),
                  ("root cause", 10))
NARROW_BELOW = 110


class RunsTable(DataTable[object]):
    """Rows keyed by run id; rebuilt only when what it shows changed, keeping the cursor on its run."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.narrow = False
        self._shown: tuple[tuple[object, ...], ...] = ()

    def on_mount(self) -> None:
        self.narrow = self.app.size.width < NARROW_BELOW
        for label, width in NARROW_COLUMNS if self.narrow else COLUMNS:
            self.add_column(label, key=label, width=width)

    def cells(self, run: RunRow, now: datetime) -> tuple[object, ...]:
        cells = (run.id, run.name, run.host, status_text(run.status), run.phase,
                 progress_cell(run, width=4 if self.narrow else 8), age(run.created_at, now),
                 Text(run.cause, style="red") if run.cause else "")
        return cells[1:] if self.narrow else cells

    @property
    def selected_run_id(self) -> str | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    def show(self, runs: Sequence[RunRow], now: datetime) -> None:
        rows = tuple((run.id, *self.cells(run, now)) for run in runs)
        if rows == self._shown:
            return
        selected = self.selected_run_id
        self._shown = rows
        self.clear()
        for row in rows:
            self.add_row(*row[1:], key=str(row[0]))
        if selected is not None:
            for index, row in enumerate(rows):
                if row[0] == selected:
                    self.move_cursor(row=index, animate=False)
                    break
