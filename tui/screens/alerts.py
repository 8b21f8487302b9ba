"""Alerts: those raised while this window was open, then the ones recorded in the history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from tui.data import AlertRow, load_alerts
from tui.deps import ScreenDeps
from tui.format import stamp
from tui.messages import AlertsLoaded, RunOpenRequested
from tui.worker_errors import ReportsWorkerErrors

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "information": "green"}
DELIVERY_STYLE = {"failed": "bold red", "expired": "red", "pending": "yellow", "sent": "green"}


class AlertsScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
        Binding("s", "settings", "Settings"),
    ]

    def __init__(self, deps: ScreenDeps, session_alerts: Sequence[AlertRow] = ()) -> None:
        """``session_alerts``: those raised while this window is open (the app's list, newest first)."""
        super().__init__()
        self.deps = deps
        self.session_alerts = session_alerts
        self.recorded: tuple[AlertRow, ...] = ()

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="alerts-table", cursor_type="row")
        yield Static("", id="alerts-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "alerts"
        table = self.query_one(DataTable)
        for label, width in (("when", 19), ("source", 8), ("alert", 40), ("delivery", 8)):
            table.add_column(label, key=label, width=width)
        table.focus()
        self.action_reload()

    def action_settings(self) -> None:
        from tui.screens.alert_settings import AlertSettingsScreen  # channels, test alert, muted runs

        self.app.push_screen(AlertSettingsScreen(self.deps.ctx))

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="alerts", exit_on_error=False)
    def load(self) -> None:
        self.post_message(AlertsLoaded(load_alerts(self.deps.ctx)))

    @on(AlertsLoaded)
    def _loaded(self, message: AlertsLoaded) -> None:
        self.recorded = message.alerts
        self._show()

    def rows(self) -> list[tuple[str, AlertRow]]:
        return [("here", a) for a in self.session_alerts] + [("history", a) for a in self.recorded]

    def _show(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for index, (source, alert) in enumerate(self.rows()):
            table.add_row(stamp(alert.created_at), source,
                          Text(alert.title, style=SEVERITY_STYLE.get(alert.kind, "")),
                          Text(alert.delivery, style=DELIVERY_STYLE.get(alert.delivery, "dim")), key=str(index))
        self._show_body()

    @on(DataTable.RowHighlighted)
    def _show_body(self) -> None:
        rows = self.rows()
        table = self.query_one(DataTable)
        if not rows or table.cursor_row >= len(rows):
            self.query_one("#alerts-body", Static).update(Text("no alerts yet", style="dim"))
            return
        _source, alert = rows[table.cursor_row]
        delivery = f"\n\ndelivery:\n{alert.delivery_detail}" if alert.delivery_detail else ""
        self.query_one("#alerts-body", Static).update(Text(f"{alert.title}\n{alert.body}{delivery}"))

    @on(DataTable.RowSelected)
    def _open(self) -> None:
        rows = self.rows()
        index = self.query_one(DataTable).cursor_row
        if index < len(rows) and rows[index][1].run_id:
            self.post_message(RunOpenRequested(str(rows[index][1].run_id)))
