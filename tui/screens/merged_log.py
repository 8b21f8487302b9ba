"""Every active run's log in one view, lines interleaved as they arrive, each prefixed with its run's short id
in a colour of its own (toolong's merged view).

While this app's monitor follows the runs, the lines are its followers' (``LogFeed``, every run), the kept
ones first; otherwise a reading follower per active run, from where the history has got to.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header, RichLog, Static

from orchestrator.services.runview import RunView
from tui.data import load_detail
from tui.deps import ScreenDeps
from tui.logfeed import received
from tui.messages import LogFollowFailed, LogLinesReceived, RunsRefreshed
from tui.widgets.log_pane import styled
from tui.worker_errors import ReportsWorkerErrors

MAX_LINES = 5000
#: Run colours, in the order runs are first seen; distinct on dark and light themes.
RUN_COLOURS = ("cyan", "magenta", "green", "yellow", "bright_blue", "bright_red", "bright_cyan", "bright_magenta")


def prefixed(run_id: str, colour: str, line: str) -> Text:
    """``run_id│ line``: the id in the run's colour, the line styled as the log pane styles it."""
    text = Text(f"{run_id}│ ", style=f"bold {colour}")
    text.append_text(styled(line))
    return text


class MergedLogScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("p", "toggle_follow", "Pause/follow"),
    ]

    def __init__(self, deps: ScreenDeps, runs: tuple[RunView, ...] = ()) -> None:
        super().__init__()
        self.deps = deps
        self.runs = runs
        self.colours: dict[str, str] = {}
        self.lines: list[tuple[str, str]] = []  # (run id, line), as shown
        self.offsets: dict[str, int] = {}  # per run, just past its last line shown
        self.following = True
        self.reading: set[str] = set()  # runs with a reading follower of this screen
        self.note = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield RichLog(id="merged-log", max_lines=MAX_LINES, wrap=False, markup=False, highlight=False,
                      auto_scroll=True)
        yield Static("", id="merged-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "merged log of the active runs"
        self.query_one(RichLog).focus()
        if self.deps.log_feed.following:
            for message in received(self.deps.log_feed.subscribe(self)):
                self.post_message(message)
        self._add_runs(self.runs)
        self._update_status()

    def on_unmount(self) -> None:
        self.deps.log_feed.unsubscribe(self)

    @on(RunsRefreshed)
    def _refreshed(self, message: RunsRefreshed) -> None:
        self._add_runs(message.runs)

    def colour_of(self, run_id: str) -> str:
        if run_id not in self.colours:
            self.colours[run_id] = RUN_COLOURS[len(self.colours) % len(RUN_COLOURS)]
        return self.colours[run_id]

    def _add_runs(self, runs: tuple[RunView, ...]) -> None:
        """Active runs get a colour; without this process's followers, a reading follower each."""
        self.runs = runs
        for run in runs:
            if run.terminal:
                continue
            self.colour_of(run.id)
            if not self.deps.log_feed.following and run.id not in self.reading:
                self.reading.add(run.id)
                self.run_worker(self._read(run), group=f"merged-{run.id}", exit_on_error=False)

    async def _read(self, run: RunView) -> None:
        """Follow one run's log from where the history has got to (its detail, read in a thread)."""
        detail = await asyncio.to_thread(load_detail, self.deps.ctx, run.id, self.deps.clock(),
                                         self.deps.monitor_running)
        if not detail.log_path:
            return
        await self.deps.log_feed.read_retrying(run.host, run.id, detail.log_path, detail.log_offset,
                                               self.post_message, skip_partial=detail.log_offset > 0)

    @on(LogLinesReceived)
    def _lines(self, message: LogLinesReceived) -> None:
        message.stop()
        if message.offset <= self.offsets.get(message.run_id, 0):
            return
        self.offsets[message.run_id] = message.offset
        colour = self.colour_of(message.run_id)
        log = self.query_one(RichLog)
        for line in message.lines:
            self.lines.append((message.run_id, line))
            log.write(prefixed(message.run_id, colour, line), scroll_end=self.following)
        del self.lines[:-MAX_LINES]
        self.note = ""
        self._update_status()

    @on(LogFollowFailed)
    def _failed(self, message: LogFollowFailed) -> None:
        message.stop()
        self.note = f"cannot read the log of {message.run_id}: {message.error} (retrying)"
        self._update_status()

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        log = self.query_one(RichLog)
        log.auto_scroll = self.following
        if self.following:
            log.scroll_end(animate=False)
        self._update_status()

    def _update_status(self) -> None:
        status = Text(" · ".join(p for p in ("following" if self.following else "paused (p to follow)",
                                             f"{len(self.lines)} lines") if p))
        for run_id, colour in self.colours.items():
            status.append("  ")
            status.append(run_id, style=f"bold {colour}")
        if self.note:
            status.append(f" · {self.note}")
        self.query_one("#merged-status", Static).update(status)
