"""Rerun a run from the runs list or its detail: what will run (orchestrator.actions.rerun's plan), a yes, the launch
(`eorch rerun`'s own ``orchestrator.actions.rerun.rerun``), then the new run opens. Errors show in the modal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Static

from orchestrator.context import Context
from orchestrator.errors import EorchError, PreflightRefused
from orchestrator.services.launches import RerunPlan
from tui.messages import RunOpenRequested, RunsRefreshRequested
from tui.worker_errors import ReportsWorkerErrors


@dataclass
class RerunPlanned(Message):
    plan: RerunPlan | None
    error: str | None = None


@dataclass
class RerunLaunched(Message):
    run_id: str


@dataclass
class RerunFailed(Message):
    error: str


class RerunScreen(ReportsWorkerErrors, ModalScreen[str | None]):
    """Dismissed with the new run's id, or None when nothing was started."""

    DEFAULT_CSS = """
    RerunScreen { align: center middle; }
    #rerun-box { width: 76; max-width: 100%; height: auto; padding: 1 2; border: thick $warning;
                 background: $surface; }
    #rerun-error { color: $error; }
    #rerun-buttons { height: auto; margin-top: 1; }
    #rerun-buttons Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "rerun", "Rerun"),
        Binding("n,escape", "close", "No"),
    ]

    def __init__(self, ctx: Context, run_id: str) -> None:
        super().__init__()
        self.ctx = ctx
        self.run_id = run_id
        self.plan: RerunPlan | None = None
        self.launching = False

    def compose(self) -> ComposeResult:
        with Vertical(id="rerun-box"):
            yield Static(f"Rerun run {self.run_id}?", id="rerun-title")
            yield Static("reading what it ran…", id="rerun-plan", markup=False)
            yield Static("", id="rerun-error", markup=False)
            with Horizontal(id="rerun-buttons"):
                yield Button("Rerun (y)", variant="warning", id="rerun-yes", disabled=True)
                yield Button("No (n)", id="rerun-no")

    def on_mount(self) -> None:
        self.query_one("#rerun-no", Button).focus()
        self.load_plan()

    @work(thread=True, exclusive=True, group="rerun-plan", exit_on_error=False)
    def load_plan(self) -> None:
        from orchestrator.services.launches import load_plan

        try:
            self.post_message(RerunPlanned(load_plan(self.ctx, self.run_id)))
        except EorchError as err:
            self.post_message(RerunPlanned(None, str(err)))

    @on(RerunPlanned)
    def _planned(self, message: RerunPlanned) -> None:
        self.plan = message.plan
        self.query_one("#rerun-plan", Static).update(message.plan.describe() if message.plan else "")
        self.query_one("#rerun-error", Static).update(message.error or "")
        self.query_one("#rerun-yes", Button).disabled = message.plan is None

    def action_rerun(self) -> None:
        if self.plan is None or self.launching:
            return
        self.launching = True
        self.query_one("#rerun-yes", Button).disabled = True
        self.query_one("#rerun-error", Static).update(Text("launching…", style="dim"))
        self.launch(self.plan)

    def action_close(self) -> None:
        if not self.launching:  # a launch under way is seen through: cut off, it would leave a pending run
            self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "rerun-yes":
            self.action_rerun()
        else:
            self.action_close()

    @work(exclusive=True, group="rerun-launch", exit_on_error=False)
    async def launch(self, plan: RerunPlan) -> None:
        from orchestrator.services.launches import rerun

        try:
            run, _report = await rerun(self.ctx, plan)
        except PreflightRefused as err:
            self.post_message(RerunFailed(f"{err}\n{err.first_failure}"))
            return
        except EorchError as err:
            self.post_message(RerunFailed(str(err)))
            return
        self.post_message(RerunLaunched(run.id))

    @on(RerunFailed)
    def _failed(self, message: RerunFailed) -> None:
        self.launching = False
        self.query_one("#rerun-error", Static).update(f"rerun failed: {message.error}")
        self.query_one("#rerun-yes", Button).disabled = False

    @on(RerunLaunched)
    def _launched(self, message: RerunLaunched) -> None:
        self.launching = False
        self.dismiss(message.run_id)


def ask_to_rerun(screen: Screen[Any], ctx: Context, run_id: str) -> None:
    """Ask, rerun, then open the new run (from the runs list or a run's detail)."""

    def answered(new_id: str | None) -> None:
        if new_id:
            screen.notify(f"launched run {new_id}, a rerun of {run_id}")
            screen.post_message(RunsRefreshRequested())
            screen.post_message(RunOpenRequested(new_id))

    screen.app.push_screen(RerunScreen(ctx, run_id), answered)
