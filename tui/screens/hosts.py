"""Hosts: reachability, GPUs with free memory per GPU, disk; `r` checks them all again."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from orchestrator.services.hosts import HostView
from tui.data import check_host, load_hosts, save_host_check
from tui.deps import ScreenDeps
from tui.format import stamp
from tui.messages import HostChecked, HostsLoaded
from tui.widgets.host_facts import disk_summary, facts_text, gpu_summary
from tui.worker_errors import ReportsWorkerErrors


def reach_text(host: HostView, checking: bool) -> Text:
    if checking:
        return Text("checking…", style="cyan")
    if host.reachable is None:
        return Text("unknown", style="dim")
    if host.reachable:
        return Text("reachable", style="green")
    return Text(f"down since {stamp(host.unreachable_since)}", style="bold red")


class HostsScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "check_all", "Check all"),
        Binding("n", "launch_here", "Launch here"),
    ]

    def __init__(self, deps: ScreenDeps) -> None:
        super().__init__()
        self.deps = deps
        self.hosts: dict[str, HostView] = {}
        self.errors: dict[str, str] = {}
        self.checking: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="hosts-table", cursor_type="row")
        yield Static("", id="host-facts")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "hosts"
        table = self.query_one(DataTable)
        for label, width in (("host", 10), ("reachability", 14), ("GPUs (free per GPU)", 36), ("disk free", 10)):
            table.add_column(label, key=label, width=width)
        table.focus()
        self.load()

    @work(thread=True, exclusive=True, group="hosts-load", exit_on_error=False)
    def load(self) -> None:
        self.post_message(HostsLoaded(load_hosts(self.deps.ctx)))

    @on(HostsLoaded)
    def _loaded(self, message: HostsLoaded) -> None:
        self.hosts = {h.name: h for h in message.hosts}
        self._show()

    def _show(self) -> None:
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for host in self.hosts.values():
            table.add_row(host.name, reach_text(host, host.name in self.checking), gpu_summary(host.facts),
                          disk_summary(host.facts), key=host.name)
        if self.hosts:
            table.move_cursor(row=min(cursor, len(self.hosts) - 1))
        self._show_facts()

    def _show_facts(self) -> None:
        name = self.selected
        host = self.hosts.get(name) if name else None
        text = facts_text(host.name, host.facts, self.errors.get(host.name)) if host else Text("no hosts")
        self.query_one("#host-facts", Static).update(text)

    @property
    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        value = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(value) if value is not None else None

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._show_facts()

    def action_check_all(self) -> None:
        self.checking = set(self.hosts)
        self._show()
        self.check_all(tuple(self.hosts))

    @work(exclusive=True, group="hosts-check", exit_on_error=False)
    async def check_all(self, names: tuple[str, ...]) -> None:
        async def one(name: str) -> None:
            facts, error = await check_host(self.deps.ctx, name)
            await asyncio.to_thread(save_host_check, self.deps.ctx, name, facts, error)
            self.post_message(HostChecked(name, facts, error))

        await asyncio.gather(*(one(n) for n in names))
        self.load()

    @on(HostChecked)
    def _checked(self, message: HostChecked) -> None:
        self.checking.discard(message.host)
        if message.error:
            self.errors[message.host] = message.error
        else:
            self.errors.pop(message.host, None)
        self.load()

    def action_launch_here(self) -> None:
        from tui.screens.launch import LaunchScreen

        self.app.push_screen(LaunchScreen(self.deps, self.selected))
