"""One run: header, progress, phase timeline, the remote log, the root cause; cancel, copy id."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from orchestrator.errors import EorchError
from tui.cancelling import ask_to_cancel, told_cancel_failed, told_cancelled
from tui.data import RunDetail, load_detail
from tui.deps import ScreenDeps
from tui.messages import CancelFailed, RunCancelled, RunDetailLoaded, RunLoadFailed, RunsRefreshed
from tui.muting import toggle_mute
from tui.screens.confirm import MessageScreen
from tui.screens.rerun import ask_to_rerun
from tui.widgets.log_pane import LogPane
from tui.widgets.run_panels import RootCausePanel, ShardProgress, header_text, timeline_text
from tui.worker_errors import ReportsWorkerErrors


class RunDetailScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("c", "cancel_run", "Cancel run"),
        Binding("y", "copy_id", "Copy id"),
        Binding("o", "open_pager", "Pager"),
        Binding("t", "copy_traceback", "Copy traceback", show=False),
        Binding("r", "show_tab('cause-tab')", "Root cause"),
        Binding("l", "show_tab('log-tab')", "Log"),
        Binding("R", "rerun_run", "Rerun", show=False),  # `r` is the root cause here
        Binding("m", "mute_run", "Mute/unmute alerts", show=False),
    ]

    def __init__(self, deps: ScreenDeps, run_id: str) -> None:
        super().__init__()
        self.deps = deps
        self.run_id = run_id
        self.detail: RunDetail | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="run-header")
        yield ShardProgress(id="run-progress")
        yield Static("", id="run-timeline")
        with TabbedContent(initial="log-tab", id="run-tabs"):
            with TabPane("Log", id="log-tab"):
                yield LogPane(self.deps.log_feed, id="log-pane")
            with TabPane("Root cause", id="cause-tab"):
                yield RootCausePanel(id="root-cause")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"run {self.run_id}"
        self.query_one(ShardProgress).display = False
        self.load()

    @work(thread=True, exclusive=True, group="run-detail", exit_on_error=False)
    def load(self) -> None:
        try:
            detail = load_detail(self.deps.ctx, self.run_id, self.deps.clock(), self.deps.monitor_running)
        except EorchError as err:
            self.post_message(RunLoadFailed(self.run_id, str(err)))
            return
        self.post_message(RunDetailLoaded(detail))

    @on(RunsRefreshed)
    def _refreshed(self, message: RunsRefreshed) -> None:
        self.load()

    @on(RunLoadFailed)
    def _load_failed(self, message: RunLoadFailed) -> None:
        self.query_one("#run-header", Static).update(Text(f"run {message.run_id}: {message.error}", style="red"))

    @on(RunDetailLoaded)
    def _loaded(self, message: RunDetailLoaded) -> None:
        first = self.detail is None
        detail = self.detail = message.detail
        self.run_id = detail.row.id
        self.sub_title = f"run {detail.row.id} · {detail.row.name}"
        self.query_one("#run-header", Static).update(header_text(detail))
        self.query_one(ShardProgress).show(detail, self.deps.clock())
        self.query_one("#run-timeline", Static).update(timeline_text(detail))
        self.query_one(RootCausePanel).show(detail)
        pane = self.query_one(LogPane)
        cause = detail.root_cause or {}
        pane.error_needles = tuple(str(x) for x in (
            f"{cause.get('exception')}: {cause.get('message')}" if cause.get("exception") else "",
            f"{cause.get('exception')}:" if cause.get("exception") else "",
        ) if x)
        if detail.log_path:
            # a run this process followed to its end stays so: its follower drained the log before the end
            live = self.deps.log_feed.following and (not detail.row.terminal or pane.live)
            pane.start(detail.row.id, detail.row.host, detail.log_path, detail.log_offset, live=live)
        else:
            pane.show_note("no log yet: the run has no directory on its host")
        if first and detail.row.status in ("failed", "lost"):
            self.action_show_tab("cause-tab")  # a failed run opens on why it failed
        elif first:
            pane.query_one("#log-text").focus()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "log-tab":  # the log's keys (search, jump to error, pause) work at once
            pane = self.query_one(LogPane)
            pane.query_one("#log-text").focus()
            pane.show_end()

    def action_copy_id(self) -> None:
        self.app.copy_to_clipboard(self.run_id)
        self.notify(f"copied run id {self.run_id}")

    def action_open_pager(self) -> None:
        """The whole log in `$PAGER` (default `less`), the app suspended meanwhile; where the app cannot be
        suspended (no real terminal), the command to run instead, copied."""
        command = [sys.executable, "-m", "orchestrator.cli.main", "logs", self.run_id]
        pager = shlex.split(os.environ.get("PAGER") or "less")
        try:
            with self.app.suspend():
                logs = subprocess.Popen(command, stdout=subprocess.PIPE)
                try:
                    subprocess.run(pager, stdin=logs.stdout, check=False)
                finally:
                    assert logs.stdout is not None
                    logs.stdout.close()
                    logs.terminate()
                    logs.wait()
        except SuspendNotSupported:
            shown = f"eorch logs {self.run_id} | {shlex.join(pager)}"
            self.app.copy_to_clipboard(shown)
            self.app.push_screen(MessageScreen("Read the log in a shell (copied)", shown))
        except OSError as err:
            self.app.push_screen(MessageScreen(f"Could not start the pager {pager[0]!r}", str(err)))

    def action_copy_traceback(self) -> None:
        """Copy the root cause's full traceback (or its exception line), to paste into an issue."""
        cause = (self.detail.root_cause if self.detail else None) or {}
        text = str(cause.get("traceback") or "") or ": ".join(
            str(x) for x in (cause.get("exception"), cause.get("message")) if x)
        if not text:
            self.notify("no root cause to copy", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"copied the root cause ({len(text.splitlines())} lines)")

    def action_cancel_run(self) -> None:
        if self.detail is not None:
            ask_to_cancel(self, self.deps.ctx, self.detail.row)

    def action_rerun_run(self) -> None:
        ask_to_rerun(self, self.deps.ctx, self.run_id)  # tui/screens/rerun.py

    def action_mute_run(self) -> None:
        toggle_mute(self, self.deps.ctx, self.run_id)  # tui/muting.py

    @on(RunCancelled)
    def _cancelled(self, message: RunCancelled) -> None:
        told_cancelled(self, message)

    @on(CancelFailed)
    def _cancel_failed(self, message: CancelFailed) -> None:
        told_cancel_failed(self, message)
