"""The runs screen: a live table of runs, newest first; `/` filters, `f` picks a status, `o` sorts, `c` cancels,
`r` reruns, `m` mutes alerts, Enter opens a run, `L` shows every active run's log merged."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from tui.cancelling import ask_to_cancel, told_cancel_failed, told_cancelled
from tui.deps import ScreenDeps
from tui.listing import SORTS, STATUS_FILTERS, next_of, select_runs
from tui.messages import CancelFailed, RunCancelled, RunOpenRequested, RunsRefreshed
from tui.muting import toggle_mute
from tui.screens.rerun import ask_to_rerun
from tui.widgets.runs_table import RunsTable
from tui.worker_errors import ReportsWorkerErrors

MONITOR_TEXT = {
    "following": "following runs here",
    "read-only": "another process follows the runs; reading the history",
    "off": "not following (history only)",
    "checked": "no monitor running: status checked on the hosts every 15 s",
}


class RunsScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("n", "app.launch", "Launch"),
        Binding("h", "app.hosts", "Hosts"),
        Binding("s", "app.history", "History"),
        Binding("L", "app.merged_log", "Merged log", show=False),
        Binding("f", "cycle_status", "Status filter", show=False),
        Binding("o", "cycle_sort", "Sort", show=False),
        Binding("c", "cancel_run", "Cancel run", show=False),
        Binding("r,R", "rerun_run", "Rerun", show=False),
        Binding("m", "mute_run", "Mute/unmute alerts", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, deps: ScreenDeps, snapshot: RunsRefreshed | None = None) -> None:
        super().__init__(id="runs-screen")
        self.deps = deps
        self.filter_text = ""
        self.status_filter = "all"
        self.sort = "newest"
        self.snapshot = snapshot

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="filter: words in id, name, host, status, phase, cause", id="runs-filter",
                    classes="hidden")
        yield RunsTable(id="runs-table")
        yield Static("", id="runs-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "runs"
        self.query_one(RunsTable).focus()
        if self.snapshot is not None:
            self._show(self.snapshot)

    @on(RunsRefreshed)
    def _refreshed(self, message: RunsRefreshed) -> None:
        self._show(message)

    def _show(self, snapshot: RunsRefreshed) -> None:
        self.snapshot = snapshot
        shown = select_runs(snapshot.runs, text=self.filter_text, status_filter=self.status_filter, sort=self.sort)
        self.query_one(RunsTable).show(shown, snapshot.now)
        active = sum(1 for r in snapshot.runs if not r.terminal)
        parts = [f"{len(shown)} of {len(snapshot.runs)} runs", f"{active} active",
                 MONITOR_TEXT.get(self.deps.monitor_state(), self.deps.monitor_state())]
        stale = next((r.stale_note for r in shown if r.stale_note), "")
        if stale:
            parts.append(f"status? = {stale}")
        if self.filter_text:
            parts.insert(0, f"filter {self.filter_text!r}")
        if self.status_filter != "all":
            parts.insert(0, f"status {self.status_filter}")
        if self.sort != "newest":
            parts.insert(0, f"sorted by {self.sort}")
        if not snapshot.runs:
            parts.append("press n to launch one")
        self.query_one("#runs-status", Static).update(Text(" · ".join(parts)))

    def action_cycle_status(self) -> None:
        """Show all runs, the active ones, then only each end state in turn."""
        self.status_filter = next_of(STATUS_FILTERS, self.status_filter)
        if self.snapshot is not None:
            self._show(self.snapshot)

    def action_cycle_sort(self) -> None:
        self.sort = next_of(tuple(SORTS), self.sort)
        if self.snapshot is not None:
            self._show(self.snapshot)

    def action_cancel_run(self) -> None:
        run_id = self.query_one(RunsTable).selected_run_id
        runs = self.snapshot.runs if self.snapshot is not None else ()
        row = next((r for r in runs if r.id == run_id), None)
        if row is not None:
            ask_to_cancel(self, self.deps.ctx, row)

    def action_rerun_run(self) -> None:
        if run_id := self.query_one(RunsTable).selected_run_id:
            ask_to_rerun(self, self.deps.ctx, run_id)  # tui/screens/rerun.py

    def action_mute_run(self) -> None:
        if run_id := self.query_one(RunsTable).selected_run_id:
            toggle_mute(self, self.deps.ctx, run_id)  # tui/muting.py

    @on(RunCancelled)
    def _cancelled(self, message: RunCancelled) -> None:
        told_cancelled(self, message)

    @on(CancelFailed)
    def _cancel_failed(self, message: CancelFailed) -> None:
        told_cancel_failed(self, message)

    def action_filter(self) -> None:
        box = self.query_one("#runs-filter", Input)
        box.remove_class("hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#runs-filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.query_one(RunsTable).focus()

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        if self.snapshot is not None:
            self._show(self.snapshot)

    @on(Input.Submitted, "#runs-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value:
            self.query_one("#runs-filter", Input).add_class("hidden")
        self.query_one(RunsTable).focus()

    @on(DataTable.RowSelected, "#runs-table")
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.post_message(RunOpenRequested(str(event.row_key.value)))
