"""The log pane: shows a run's log as its follower reads it, follows or pauses, searches, jumps to the error.

Lines come from the ``LogFeed`` (``tui.logfeed``): for a run this app's monitor follows, the pane reads
the tail the history already has and then takes the follower's own lines; otherwise it runs a reading
follower. Either way the pane's worker only posts ``LogLinesReceived`` and never touches a widget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.strip import Strip
from textual.widgets import Input, RichLog, Static

from orchestrator.logparse.prefixes import parse_line
from tui.format import match_spans
from tui.logfeed import LogFeed, received
from tui.messages import LogFollowFailed, LogLinesReceived
from tui.worker_errors import ReportsWorkerErrors

MAX_LINES = 5000
DEFAULT_MIN_WIDTH = 78  # RichLog's
WRAP_SLACK = 500  # wrapped, old lines are dropped this many at a time (each drop writes the log again)
TAIL_BYTES = 256 * 1024  # how much of the log before the recorded offset to show on open
MATCH_STYLE = "black on yellow"  # every match of the search
CURRENT_MATCH_STYLE = "bold black on dark_orange"  # the matches on the line n/N went to

_EXCEPTION_LINE = re.compile(r"^(?:\(\w+(?: pid=\d+)?\)\s*)?[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b")


def styled(line: str, needle: str = "", current: bool = False, wrap: bool = False) -> Text:
    """Traceback lines and errors stand out; everything else is plain text (never markup). Occurrences of
    needle (a search) are marked, more strongly on the current match's line."""
    text = Text(line, no_wrap=not wrap)
    stripped = line.lstrip()
    if "Traceback (most recent call last)" in line or _EXCEPTION_LINE.match(stripped):
        text.stylize("bold red")
    elif stripped.startswith('File "') or " ERROR " in line or line.startswith("ERROR"):
        text.stylize("red")
    elif " WARNING " in line or line.startswith("WARNING"):
        text.stylize("yellow")
    for start, end in match_spans(line, needle):
        text.stylize(CURRENT_MATCH_STYLE if current else MATCH_STYLE, start, end)
    return text


class SearchLog(RichLog):
    """A RichLog whose lines can be rendered again in place, to put search marks on, move or take them off."""

    def restyle(self, index: int, content: Text) -> None:
        if not 0 <= index < len(self.lines):
            return
        width = self.lines[index].cell_length
        options = self.app.console.options.update(overflow="ignore", no_wrap=True).update_width(max(1, width))
        lines = list(Segment.split_lines(self.app.console.render(content, options)))
        self.lines[index] = Strip(lines[0]) if lines else Strip.blank(width)
        self._line_cache.clear()
        self.refresh()


class LogPane(ReportsWorkerErrors, Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_follow", "Pause/follow"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match", "Next"),
        Binding("N", "previous_match", "Prev", show=False),
        Binding("e", "jump_to_error", "Jump to error"),
        Binding("G", "end", "End", show=False),
        Binding("w", "toggle_wrap", "Wrap", show=False),
        Binding("x", "toggle_prefixes", "Prefixes", show=False),
        Binding("escape", "close_search", "Close search", show=False),
    ]

    def __init__(self, feed: LogFeed, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.feed = feed
        self.lines: list[str] = []
        self.following = True
        self.run_id: str | None = None
        self.live = False  # lines come from this process's follower (through the feed)
        self.log_offset = 0  # just past the last line shown
        self.error_needles: tuple[str, ...] = ()
        self.search_text = ""
        self.match_index = -1
        self.marked: dict[int, bool] = {}  # line index → on the current match's line, as the log shows them
        self.note = ""
        self.wrap = False  # `w`: long lines (tracebacks) wrap instead of scrolling sideways
        self.hide_prefixes = False  # `x`: no `(Worker_TP3 pid=…) INFO 12-01 10:00:00 [file.py:12]` in front

    def compose(self) -> ComposeResult:
        yield SearchLog(id="log-text", max_lines=MAX_LINES, wrap=False, markup=False, highlight=False,
                        auto_scroll=True)
        yield Input(placeholder="search the log (Enter: find, Esc: close)", id="log-search", classes="hidden")
        yield Static("", id="log-status")

    @property
    def text_log(self) -> SearchLog:
        return self.query_one("#log-text", SearchLog)

    # ------------------------------------------------------------------------------------- following

    def start(self, run_id: str, host: str, path: str, recorded_offset: int, *, live: bool = False) -> None:
        """Show the log from a little before the recorded offset and follow it. ``live``: this process's
        monitor follows the run, so after what the history has, the lines are its follower's. Called again
        when that changes, the pane goes on from the last line it shows."""
        if self.run_id == run_id and self.live == live:
            return
        if self.run_id != run_id:
            self.run_id = run_id
            start = self.log_offset = max(0, recorded_offset - TAIL_BYTES)
            skip_partial = start > 0
            self.note = f"from byte {start}" if start else ""
            self._update_status()
        else:
            start, skip_partial = self.log_offset, False
        self.live = live
        self.feed.unsubscribe(self)
        self.follow(run_id, host, path, start, skip_partial, recorded_offset if live else None)

    @work(exclusive=True, group="log-tail", exit_on_error=False)
    async def follow(self, run_id: str, host: str, path: str, offset: int, skip_partial: bool,
                     live_from: int | None) -> None:
        """Read the log from ``offset`` (up to ``live_from`` for a live run, then subscribe to its follower's
        lines); a failed read is said and retried from the last line read."""
        await self.feed.read_retrying(host, run_id, path, offset, self.post_message, until=live_from,
                                      skip_partial=skip_partial)
        for message in received(self.feed.subscribe(self, run_id)):
            self.post_message(message)

    def on_unmount(self) -> None:
        self.feed.unsubscribe(self)

    @on(LogLinesReceived)
    def _lines(self, message: LogLinesReceived) -> None:
        message.stop()
        if message.run_id != self.run_id or message.offset <= self.log_offset:  # read before, or another run's
            return
        self.log_offset = message.offset
        self.note = ""
        self.lines.extend(message.lines)
        log = self.text_log
        for line in message.lines:
            log.write(styled(self.shown(line), self.search_text, wrap=self.wrap), scroll_end=self.following)
        limit = MAX_LINES + (WRAP_SLACK if self.wrap else 0)  # wrapped, the RichLog keeps every row
        if len(self.lines) > limit:  # unwrapped, the RichLog drops the same oldest lines
            drop = len(self.lines) - MAX_LINES
            if self.match_index >= 0:  # keep pointing at the same match
                self.match_index -= sum(1 for line in self.lines[:drop] if match_spans(self.shown(line),
                                                                                       self.search_text))
                self.match_index = max(-1, self.match_index)
            del self.lines[:drop]
            self.marked = {i - drop: current for i, current in self.marked.items() if i >= drop}
            if self.wrap:
                self._rebuild()
        for index in range(max(0, len(self.lines) - len(message.lines)), len(self.lines)):
            if match_spans(self.shown(self.lines[index]), self.search_text):
                self.marked[index] = False
        self._update_status()
        self.show_end()

    def show_end(self) -> None:
        """While following: scroll to the last line once the pane is laid out again (a long line brings a
        horizontal scrollbar, which takes a row; a hidden tab is laid out only when shown)."""
        if self.following:
            log = self.text_log
            self.call_after_refresh(log.scroll_end, animate=False)

    # ------------------------------------------------------------------------------------- display

    def shown(self, line: str) -> str:
        """A log line as the pane shows it: without the vLLM prefix when prefixes are hidden."""
        return parse_line(line).message if self.hide_prefixes else line

    def _rebuild(self) -> None:
        """Write every line again (after a wrap or prefix toggle): same lines, same marks."""
        log = self.text_log
        log.wrap = self.wrap
        log.max_lines = None if self.wrap else MAX_LINES
        log.min_width = 1 if self.wrap else DEFAULT_MIN_WIDTH  # RichLog renders ≥ 78 cells wide by default
        log.clear()
        found = self.matches()
        current = found[self.match_index] if 0 <= self.match_index < len(found) else None
        self.marked = {index: index == current for index in found}
        for index, line in enumerate(self.lines):
            needle = self.search_text if index in self.marked else ""
            log.write(styled(self.shown(line), needle, current=index == current, wrap=self.wrap), scroll_end=False)
        if self.following:
            log.scroll_end(animate=False)

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self._rebuild()
        self._update_status()

    def action_toggle_prefixes(self) -> None:
        self.hide_prefixes = not self.hide_prefixes
        self._rebuild()
        self._update_status()

    def _row_of(self, index: int) -> int:
        """The log's row where line ``index`` starts (lines take several rows when wrapped)."""
        if not self.wrap:
            return index
        width = max(1, self.text_log.scrollable_content_region.width)
        return sum(max(1, -(-cell_len(self.shown(line)) // width)) for line in self.lines[:index])

    @on(LogFollowFailed)
    def _failed(self, message: LogFollowFailed) -> None:
        message.stop()
        if message.run_id == self.run_id:
            self.note = f"cannot read the log: {message.error} (retrying)"
            self._update_status()

    def show_note(self, note: str) -> None:
        self.note = note
        self._update_status()

    def _update_status(self) -> None:
        parts = ["following" if self.following else "paused (p to follow)", f"{len(self.lines)} lines"]
        parts += [word for on, word in ((self.wrap, "wrapped"), (self.hide_prefixes, "prefixes hidden")) if on]
        if self.search_text:
            count = len(self.matches())
            where = f"{self.match_index + 1}/{count}" if self.match_index >= 0 and count else f"{count}"
            parts.append(f"search {self.search_text!r}: {where}")
        if self.note:
            parts.append(self.note)
        self.query_one("#log-status", Static).update(Text(" · ".join(parts)))

    # ---------------------------------------------------------------------------------- navigation

    def _scroll_to_line(self, index: int) -> None:
        self.following = False
        self.text_log.auto_scroll = False
        self.text_log.scroll_to(y=max(0, self._row_of(index) - 2), animate=False)
        self._update_status()

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        self.text_log.auto_scroll = self.following
        if self.following:
            self.text_log.scroll_end(animate=False)
        self._update_status()

    def action_end(self) -> None:
        self.following = False
        self.action_toggle_follow()

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.remove_class("hidden")
        box.focus()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        event.stop()
        self.search_text = event.value.strip()
        self.match_index = -1
        box = self.query_one("#log-search", Input)
        box.add_class("hidden")
        self.text_log.focus()
        if self.search_text:
            self.action_previous_match()  # the latest match first
        self._update_marks()
        self._update_status()

    def action_close_search(self) -> None:
        """Escape: close the search box; else clear the search and its marks; else let Escape go back."""
        box = self.query_one("#log-search", Input)
        if not box.has_class("hidden"):
            box.add_class("hidden")
            self.text_log.focus()
        elif self.search_text:
            self.search_text, self.match_index = "", -1
            self._update_marks()
            self._update_status()
        else:
            raise SkipAction()

    def matches(self) -> list[int]:
        return [i for i, line in enumerate(self.lines) if match_spans(self.shown(line), self.search_text)]

    def _update_marks(self) -> None:
        """Render again the log lines whose search marks changed: every match marked, the current one more."""
        found = self.matches()
        current = found[self.match_index] if 0 <= self.match_index < len(found) else None
        wanted = {index: index == current for index in found}
        if self.wrap:  # rows are not lines: write them all again
            if wanted != self.marked:
                self._rebuild()
            return
        log = self.text_log
        for index in self.marked.keys() | wanted.keys():
            if self.marked.get(index) != wanted.get(index):
                needle = self.search_text if index in wanted else ""
                log.restyle(index, styled(self.shown(self.lines[index]), needle, current=index == current))
        self.marked = wanted

    def _step_match(self, step: int) -> None:
        found = self.matches()
        if not found:
            self.match_index = -1
            self._update_status()
            return
        self.match_index = (len(found) - 1 if self.match_index < 0 and step < 0 else
                            (self.match_index + step) % len(found))
        self._update_marks()
        self._scroll_to_line(found[self.match_index])

    def action_next_match(self) -> None:
        self._step_match(1)

    def action_previous_match(self) -> None:
        self._step_match(-1)

    def error_line(self, needles: Sequence[str] = ()) -> int | None:
        """The line of the root cause: its exception text if present, else the last traceback."""
        for needle in [n for n in (*needles, *self.error_needles) if n]:
            for index in range(len(self.lines) - 1, -1, -1):
                if needle in self.lines[index]:
                    return index
        for index in range(len(self.lines) - 1, -1, -1):
            if "Traceback (most recent call last)" in self.lines[index]:
                return index
        return None

    def action_jump_to_error(self) -> None:
        index = self.error_line()
        if index is None:
            self.note = "no error in the lines shown"
            self._update_status()
            return
        self.note = f"error at line {index + 1} of the shown lines"
        self._scroll_to_line(index)
