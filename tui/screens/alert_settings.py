"""Alert settings: the configured channels (names with their tokens left out, the kinds each takes), a test
alert to the highlighted one (`eorch alerts test --channel`), and the muted runs (`u` unmutes one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from orchestrator.alerts.settings import ChannelInfo
from orchestrator.context import Context
from orchestrator.errors import EorchError
from orchestrator.services.mutes import MutedRun
from tui.format import stamp
from tui.worker_errors import ReportsWorkerErrors


@dataclass
class SettingsLoaded(Message):
    channels: tuple[ChannelInfo, ...]
    muted: tuple[MutedRun, ...]
    error: str | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SettingsLoaded)


@dataclass
class AlertTestSent(Message):
    channel: str
    outcome: str
    ok: bool


class AlertSettingsScreen(ReportsWorkerErrors, Screen[None]):
    DEFAULT_CSS = """
    AlertSettingsScreen .settings-label { text-style: bold; margin-top: 1; }
    AlertSettingsScreen DataTable { height: auto; max-height: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("t", "send_test", "Send test"),
        Binding("u", "unmute", "Unmute run"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self.ctx = ctx
        self.channels: tuple[ChannelInfo, ...] = ()
        self.muted: tuple[MutedRun, ...] = ()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Channels (t sends a test alert to the highlighted one)", classes="settings-label")
        yield DataTable(id="channels-table", cursor_type="row")
        yield Static("", id="channel-result")
        yield Static("Muted runs (m on a run mutes it; u here unmutes)", classes="settings-label")
        yield DataTable(id="muted-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "alert settings"
        channels = self.query_one("#channels-table", DataTable)
        for label, width in (("channel", 30), ("kinds", 30), ("via", 11)):
            channels.add_column(label, key=label, width=width)
        muted = self.query_one("#muted-table", DataTable)
        for label, width in (("run", 8), ("name", 24), ("host", 10), ("status", 9), ("muted since", 19)):
            muted.add_column(label, key=label, width=width)
        channels.focus()
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="alert-settings", exit_on_error=False)
    def load(self) -> None:
        from orchestrator.alerts.settings import channel_infos
        from orchestrator.services.mutes import muted_runs

        channels: tuple[ChannelInfo, ...] = ()
        error = None
        try:
            channels = tuple(channel_infos(self.ctx))
        except EorchError as err:  # a bad [alerts] config: its message never echoes a URL
            error = str(err)
        self.post_message(SettingsLoaded(channels, tuple(muted_runs(self.ctx)), error))

    @on(SettingsLoaded)
    def _loaded(self, message: SettingsLoaded) -> None:
        self.channels, self.muted = message.channels, message.muted
        table = self.query_one("#channels-table", DataTable)
        table.clear()
        for c in message.channels:
            table.add_row(Text(c.name), Text(c.kinds_text), Text(c.via), key=c.key)
        result = self.query_one("#channel-result", Static)
        if message.error:
            result.update(Text(message.error, style="red"))
        elif not message.channels:
            result.update(Text("no alert channels configured: add `[alerts] urls = [...]` to config.toml or set "
                               "EORCH_ALERT_URLS", style="dim"))
        muted = self.query_one("#muted-table", DataTable)
        muted.clear()
        for r in message.muted:
            muted.add_row(r.id, Text(r.name), Text(r.host), r.status, stamp(r.muted_at), key=r.id)
        if not message.muted:
            muted.add_row("", Text("none", style="dim"), "", "", "")

    def _highlighted(self, table_id: str) -> str | None:
        table = self.query_one(table_id, DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key else None

    def action_send_test(self) -> None:
        key = self._highlighted("#channels-table")
        channel = next((c for c in self.channels if c.key == key), None)
        if channel is None:
            self.notify("no channel to test", severity="warning")
            return
        self.query_one("#channel-result", Static).update(Text(f"sending a test alert to {channel.name}…"))
        self.send_test(channel)

    @work(thread=True, exclusive=True, group="alert-test", exit_on_error=False)
    def send_test(self, channel: ChannelInfo) -> None:
        from orchestrator.alerts.engine import send_test

        try:
            deliveries = send_test(self.ctx, only=channel.key)
        except EorchError as err:
            self.post_message(AlertTestSent(channel.name, str(err), False))
            return
        ok = bool(deliveries) and all(d.ok for d in deliveries)
        outcome = "delivered" if ok else "; ".join(f"FAILED after {d.attempts} attempts: {d.error}"
                                                   for d in deliveries if not d.ok) or "not sent"
        self.post_message(AlertTestSent(channel.name, outcome, ok))

    @on(AlertTestSent)
    def _test_sent(self, message: AlertTestSent) -> None:
        self.query_one("#channel-result", Static).update(
            Text(f"test alert to {message.channel}: {message.outcome}", style="green" if message.ok else "red"))

    def action_unmute(self) -> None:
        run_id = self._highlighted("#muted-table")
        if run_id:
            self.unmute(run_id)

    @work(thread=True, exclusive=True, group="alert-unmute", exit_on_error=False)
    def unmute(self, run_id: str) -> None:
        from orchestrator.services.mutes import set_muted

        try:
            set_muted(self.ctx, run_id, False)
        except EorchError as err:
            self.app.notify(str(err), severity="error")
            return
        self.app.notify(f"alerts of run {run_id} on again")  # thread-safe, as is call_from_thread
        self.app.call_from_thread(self.load)
