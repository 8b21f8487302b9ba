"""History: filter (`status:failed host:gpu since:7d name:eagle* sig:… exc:…`) and full-text search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from orchestrator.errors import EorchError
from tui.data import HistoryResult, search_history
from tui.deps import ScreenDeps
from tui.messages import RunOpenRequested
from tui.widgets.runs_table import RunsTable
from tui.worker_errors import ReportsWorkerErrors


@dataclass
class HistorySearched(Message):
    query: str
    result: HistoryResult | None
    error: str | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HistorySearched)


class HistoryScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("slash", "focus_query", "Search"),
    ]

    def __init__(self, deps: ScreenDeps, query: str = "") -> None:
        super().__init__()
        self.deps = deps
        self.initial_query = query
        self.result: HistoryResult | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(value=self.initial_query, id="history-query",
                    placeholder="words, or status:failed host:gpu since:7d exc:OutOfMemoryError")
        yield RunsTable(id="history-table")
        yield Static("", id="history-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "history"
        self.query_one("#history-query", Input).focus()
        self.search(self.initial_query)

    def action_focus_query(self) -> None:
        self.query_one("#history-query", Input).focus()

    @on(Input.Changed, "#history-query")
    def _changed(self, event: Input.Changed) -> None:
        self.search(event.value)

    @on(Input.Submitted, "#history-query")
    def _submitted(self) -> None:
        self.query_one(RunsTable).focus()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def search(self, query: str) -> None:
        try:
            self.post_message(HistorySearched(query, search_history(self.deps.ctx, query, self.deps.clock())))
        except EorchError as err:
            self.post_message(HistorySearched(query, None, str(err)))

    @on(HistorySearched)
    def _searched(self, message: HistorySearched) -> None:
        status = self.query_one("#history-status", Static)
        if message.result is None:
            status.update(Text(str(message.error), style="red"))
            return
        self.result = message.result
        self.query_one(RunsTable).show(message.result.runs, self.deps.clock())
        status.update(Text(f"{len(message.result.runs)} runs" + (f" · {message.result.note}" if message.result.note else "")))

    @on(DataTable.RowHighlighted, "#history-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.result and event.row_key.value in self.result.snippets:
            self.query_one("#history-status", Static).update(Text(f"… {self.result.snippets[str(event.row_key.value)]}"))

    @on(DataTable.RowSelected, "#history-table")
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.post_message(RunOpenRequested(str(event.row_key.value)))
