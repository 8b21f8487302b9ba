"""Launch a run: pick a host (with its GPUs and disk), a command or a job spec, a name, env vars and a
working directory; see what will run; launch. Errors show inline, under the form."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Label, Select, Static

from orchestrator.errors import EorchError, PreflightRefused
from tui.data import check_host, load_hosts, save_host_check
from tui.deps import ScreenDeps
from tui.launch_plan import LaunchForm, LaunchPlan, describe, plan
from tui.messages import (
    HostChecked,
    HostsLoaded,
    LaunchFailed,
    LaunchPlanned,
    RunLaunched,
    RunsRefreshRequested,
)
from tui.widgets.host_facts import facts_text
from tui.worker_errors import ReportsWorkerErrors


class LaunchScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+s", "launch", "Launch"),
        Binding("ctrl+r", "check_host", "Check host"),
    ]

    def __init__(self, deps: ScreenDeps, host: str | None = None) -> None:
        super().__init__()
        self.deps = deps
        self.initial_host = host
        self.facts: dict[str, dict[str, object] | None] = {}
        self.planned: LaunchPlanned | None = None
        self.launching = False

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="launch-form"):
            with Horizontal(classes="field"):
                yield Label("host")
                yield Select[str]([], prompt="pick a host", id="launch-host", allow_blank=True)
            yield Static("", id="launch-facts")
            with Horizontal(classes="field"):
                yield Label("command")
                yield Input(placeholder="python train.py --epochs 3 (or a spec file below)", id="launch-command")
            with Horizontal(classes="field"):
                yield Label("spec file")
                yield Input(placeholder="job spec TOML, e.g. deploy/examples/command.toml", id="launch-spec")
            with Horizontal(classes="field"):
                yield Label("name")
                yield Input(placeholder="defaults to the command", id="launch-name")
                yield Label("cwd", classes="beside")  # beside the name: the form still fits 80×24
                yield Input(placeholder="on the host (optional)", id="launch-cwd")
            with Horizontal(classes="field"):
                yield Label("env")
                yield Input(placeholder="KEY=VALUE KEY2=VALUE2", id="launch-env")
            yield Static("", id="launch-preview")
            yield Static("", id="launch-error")
            yield Button("Launch (ctrl+s)", variant="primary", id="launch-button")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "launch a run"
        self.load_hosts()

    @work(thread=True, exclusive=True, group="launch-hosts", exit_on_error=False)
    def load_hosts(self) -> None:
        self.post_message(HostsLoaded(load_hosts(self.deps.ctx)))

    @on(HostsLoaded)
    def _hosts(self, message: HostsLoaded) -> None:
        self.facts = {h.name: h.facts for h in message.hosts}
        select = self.query_one("#launch-host", Select)
        select.set_options([(h.name if h.name == h.destination else f"{h.name} ({h.destination})", h.name)
                            for h in message.hosts])
        wanted = self.initial_host or (message.hosts[0].name if len(message.hosts) == 1 else None)
        if wanted in self.facts:
            select.value = wanted
        select.focus()

    def form(self) -> LaunchForm:
        host = self.query_one("#launch-host", Select).value
        return LaunchForm(
            host=host if isinstance(host, str) else None,
            command=self.query_one("#launch-command", Input).value,
            spec_path=self.query_one("#launch-spec", Input).value,
            name=self.query_one("#launch-name", Input).value,
            env=self.query_one("#launch-env", Input).value,
            cwd=self.query_one("#launch-cwd", Input).value,
        )

    @on(Select.Changed, "#launch-host")
    def _host_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#launch-facts", Static).update(facts_text(event.value, self.facts.get(event.value)))
            self.check(event.value)
        self.check_form(self.form())

    @on(Input.Changed)
    def _field_changed(self, event: Input.Changed) -> None:
        self.check_form(self.form())

    @on(Input.Submitted)
    def _field_submitted(self, event: Input.Submitted) -> None:
        self.focus_next()

    # --------------------------------------------------------------------------------------- host check

    def action_check_host(self) -> None:
        host = self.form().host
        if host:
            self.check(host)

    @work(exclusive=True, group="launch-check", exit_on_error=False)
    async def check(self, host: str) -> None:
        facts, error = await check_host(self.deps.ctx, host)
        await asyncio.to_thread(save_host_check, self.deps.ctx, host, facts, error)
        self.post_message(HostChecked(host, facts, error))

    @on(HostChecked)
    def _checked(self, message: HostChecked) -> None:
        if message.facts is not None:
            self.facts[message.host] = message.facts
        if self.form().host == message.host:
            self.query_one("#launch-facts", Static).update(
                facts_text(message.host, message.facts or self.facts.get(message.host), message.error))

    # ------------------------------------------------------------------------------------------ plan

    @work(thread=True, exclusive=True, group="launch-plan", exit_on_error=False)
    def check_form(self, form: LaunchForm) -> None:
        try:
            self.post_message(LaunchPlanned(plan(form), None))
        except EorchError as err:
            self.post_message(LaunchPlanned(None, str(err)))

    @on(LaunchPlanned)
    def _planned(self, message: LaunchPlanned) -> None:
        self.planned = message
        preview = describe(message.planned) if message.planned else ""
        self.query_one("#launch-preview", Static).update(Text(f"will run {preview}" if preview else ""))
        self.query_one("#launch-error", Static).update(Text(message.error or ""))

    # ---------------------------------------------------------------------------------------- launch

    def action_launch(self) -> None:
        if self.launching:
            return
        try:
            planned = plan(self.form())
        except EorchError as err:
            self.query_one("#launch-error", Static).update(Text(str(err)))
            return
        self.launching = True
        self.query_one("#launch-error", Static).update("launching…")
        self.launch(planned)

    @on(Button.Pressed, "#launch-button")
    def _launch_pressed(self) -> None:
        self.action_launch()

    @work(exclusive=True, group="launch", exit_on_error=False)
    async def launch(self, planned: LaunchPlan) -> None:
        from orchestrator.services.launches import launch, launch_checked

        try:
            if planned.request.kind == "eagle3-extract":  # the same preflight as `eorch launch --spec`
                run, _ = await launch_checked(self.deps.ctx, planned.host, planned.request)
            else:
                run = await launch(self.deps.ctx, planned.host, planned.request)
        except PreflightRefused as err:
            self.post_message(LaunchFailed(f"{err}\n{err.first_failure}"))
            return
        except EorchError as err:
            self.post_message(LaunchFailed(str(err)))
            return
        self.post_message(RunLaunched(run.id, run.name, run.host))

    @on(LaunchFailed)
    def _failed(self, message: LaunchFailed) -> None:
        self.launching = False
        self.query_one("#launch-error", Static).update(Text(f"launch failed: {message.error}"))

    @on(RunLaunched)
    def _launched(self, message: RunLaunched) -> None:
        self.launching = False
        self.notify(f"launched run {message.run_id} ({message.name}) on {message.host}")
        self.post_message(RunsRefreshRequested())
        from tui.screens.run_detail import RunDetailScreen

        self.app.switch_screen(RunDetailScreen(self.deps, message.run_id))
