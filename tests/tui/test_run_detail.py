"""The run detail screen: header, timeline, root cause, the tailed log and its navigation."""

from __future__ import annotations

from seed import FAILED_LOG
from textual.message import Message
from textual.widgets import Static, TabbedContent

from tui.messages import LogLinesReceived, RunDetailLoaded
from tui.screens.confirm import ConfirmScreen, MessageScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.log_pane import LogPane, clean_line, styled


async def until(pilot, predicate, what: str, tries: int = 150) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


class TestRunDetail:
    async def test_failed_run_shows_header_timeline_cause_and_log(self, make_app, seeded) -> None:
        """Header, phase durations, root cause with hint and earlier run; the log tails from `local`."""
        messages: list[Message] = []
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            screen = app.screen
            assert isinstance(screen, RunDetailScreen)
            pane = screen.query_one(LogPane)
            await until(pilot, lambda: len(pane.lines) >= 14, "log lines")
            header = text_of(screen, "#run-header")
            assert "bb22cc33" in header and "failed" in header and "exit 1" in header
            assert "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 2" in header
            timeline = text_of(screen, "#run-timeline")
            assert timeline.startswith("launch 1m00s → loading 18m00s → loaded 1m00s → end failed")
            cause = str(screen.query_one("#cause-text", Static).content)
            assert "torch.OutOfMemoryError: CUDA out of memory" in cause
            assert "seen before in runs ee55ff66" in cause
            assert 'File "/opt/vllm/vllm/v1/worker/gpu_worker.py"' in cause
            # ANSI and carriage returns never reach the screen; markup-looking text stays literal.
            assert pane.lines[1].startswith("(EngineCore_DP0 pid=4242) INFO")
            assert pane.lines[2] == "Loading safetensors checkpoint shards: 100% Completed | 4/4 [18:02<00:00, 270.5s/it]"
            assert "[bold]literal[/bold]" in pane.lines[4]
            received = [m for m in messages if isinstance(m, LogLinesReceived)]
            assert received[-1].offset == len(FAILED_LOG.encode())  # byte offsets, line ends included
            assert any(isinstance(m, RunDetailLoaded) for m in messages)

    async def test_jump_to_error_search_and_pause(self, make_app, seeded) -> None:
        """`e` jumps to the root-cause line and pauses following; `/` finds lines; `p` follows again."""
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(80, 24)) as pilot:
            pane = app.screen.query_one(LogPane)
            await until(pilot, lambda: len(pane.lines) >= 14, "log lines")
            await pilot.press("e")
            assert not pane.following
            assert "error at line 12" in text_of(pane, "#log-status")
            assert pane.lines[11].startswith("torch.OutOfMemoryError")
            await pilot.press("slash", *"worker", "enter")
            status = text_of(pane, "#log-status")
            assert "search 'worker': 2/2" in status
            await pilot.press("n")
            assert "search 'worker': 1/2" in text_of(pane, "#log-status")
            await pilot.press("p")
            assert pane.following and text_of(pane, "#log-status").startswith("following")

    async def test_root_cause_tab_and_escape_back(self, make_app, seeded) -> None:
        """`r` shows the root-cause tab, `l` the log; Escape returns to the runs table."""
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.2)
            await pilot.press("r")
            assert app.screen.query_one(TabbedContent).active == "cause-tab"
            await pilot.press("l")
            assert app.screen.query_one(TabbedContent).active == "log-tab"
            await pilot.press("escape")
            assert not isinstance(app.screen, RunDetailScreen)

    async def test_running_run_shows_shard_progress_and_ongoing_phase(self, make_app, seeded) -> None:
        """The loading run's bar says 12/35, rate per minute and ETA; its current phase has no end yet."""
        app = make_app(open_run=seeded["running"])
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.detail is not None, "detail")
            await pilot.pause(0.1)
            assert text_of(screen, "#progress-text") == "12/35 · 2.00 shards/min · ETA 11m30s"
            assert text_of(screen, "#run-timeline") == "launch 2m00s → loading …"
            assert "env: Python 3.11.9 · torch 2.8.0 · vllm 0.11.0" in text_of(screen, "#run-header")
            assert "no log yet" in text_of(screen.query_one(LogPane), "#log-status")

    async def test_cancel_asks_first_and_no_keeps_the_run(self, make_app, seeded) -> None:
        """`c` on an active run asks; `n` answers no and nothing is cancelled."""
        app = make_app(open_run=seeded["running"])
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.screen.detail is not None, "detail")
            await pilot.press("c")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            assert isinstance(app.screen, RunDetailScreen)
            from orchestrator.store.models import Run

            with app.ctx.db() as s:
                assert s.get(Run, seeded["running"]).cancel_requested is False

    async def test_copy_id_and_logs_command(self, make_app, seeded) -> None:
        """`y` copies the run id; `o` shows (and copies) the `eorch logs` command."""
        app = make_app(open_run=seeded["failed"])
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.1)
            await pilot.press("y")
            await pilot.press("o")
            assert copied == ["bb22cc33", "eorch logs bb22cc33 -f"]
            assert isinstance(app.screen, MessageScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, RunDetailScreen)


class TestLogLines:
    def test_clean_line_strips_escapes_and_keeps_last_carriage_segment(self) -> None:
        """Colour codes, OSC titles and control bytes go; `\\r` progress keeps its last state."""
        raw = b"\x1b]0;title\x07\x1b[32mok\x1b[0m 10%\r\x1b[32mok\x1b[0m 100%\x07\r"
        assert clean_line(raw) == "ok 100%"

    def test_styled_marks_tracebacks(self) -> None:
        """Traceback headers and exception lines are red; ordinary lines are plain."""
        assert "red" in str(styled("Traceback (most recent call last):").style or styled(
            "Traceback (most recent call last):").spans[0].style)
        assert not styled("INFO loading").spans
