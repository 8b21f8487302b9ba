"""The run detail screen: header, timeline, root cause, the tailed log and its navigation."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from seed import FAILED_LOG, seed_slurm
from textual.message import Message
from textual.widgets import Input, Static, TabbedContent

from orchestrator.logparse.shown import shown_line as clean_line
from tui.messages import LogLinesReceived, RunDetailLoaded
from tui.screens.confirm import ConfirmScreen, MessageScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.log_pane import CURRENT_MATCH_STYLE, MATCH_STYLE, LogPane, styled


async def until(pilot, predicate, what: str, tries: int = 150) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def marks(strips) -> dict[int, dict[str, str]]:
    """{line: {"match"|"current": the marked text}} for the rendered log lines with search marks."""
    kinds = {Style.parse(MATCH_STYLE).bgcolor: "match", Style.parse(CURRENT_MATCH_STYLE).bgcolor: "current"}
    found: dict[int, dict[str, str]] = {}
    for index, strip in enumerate(strips):
        segment: Segment
        for segment in strip:
            kind = kinds.get(segment.style.bgcolor) if segment.style else None
            if kind:
                line = found.setdefault(index, {})
                line[kind] = line.get(kind, "") + segment.text
    return found


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
            await pilot.press("l")  # a failed run opens on its root cause
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

    async def test_search_highlights_every_match_and_the_current_one(self, make_app, seeded) -> None:
        """After `/worker`, every occurrence in the shown log is marked and the current match's line stands
        out; `n` moves the current mark; an empty search, or Escape on the log, removes every mark."""
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.screen.query_one(LogPane)
            await until(pilot, lambda: len(pane.lines) >= 14, "log lines")
            await pilot.press("l")  # a failed run opens on its root cause
            log = pane.text_log
            before = [(strip.text, strip.cell_length) for strip in log.lines]
            await pilot.press("slash", *"worker", "enter")
            # Line 10 is `File ".../v1/worker/gpu_worker.py"`, line 13 `Worker proc VllmWorker-0 died`.
            assert marks(log.lines) == {9: {"match": "workerworker"}, 12: {"current": "WorkerWorker"}}
            assert "search 'worker': 2/2" in text_of(pane, "#log-status")
            await pilot.press("n")
            assert marks(log.lines) == {9: {"current": "workerworker"}, 12: {"match": "WorkerWorker"}}
            await pilot.press("N")
            assert marks(log.lines) == {9: {"match": "workerworker"}, 12: {"current": "WorkerWorker"}}
            # A line that arrives while searching is marked too.
            pane.post_message(LogLinesReceived(seeded["failed"], ("late WORKER line",), pane.log_offset + 17))
            await until(pilot, lambda: len(pane.lines) == 15, "the late line")
            assert marks(log.lines)[14] == {"match": "WORKER"}
            # Searching again with nothing clears every mark.
            await pilot.press("slash")
            pane.query_one("#log-search", Input).value = ""
            await pilot.press("enter")
            assert marks(log.lines) == {} and "search" not in text_of(pane, "#log-status")
            assert [(strip.text, strip.cell_length) for strip in log.lines[:14]] == before  # same text, unmarked
            # Escape on the log clears an active search first; the next Escape goes back.
            await pilot.press("slash", *"engine", "enter")
            assert set(marks(log.lines)) == {1, 5, 7, 8, 13}
            await pilot.press("escape")
            assert marks(log.lines) == {} and isinstance(app.screen, RunDetailScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, RunDetailScreen)

    async def test_slurm_job_in_the_header(self, make_app, seeded, ctx) -> None:
        """A Slurm run's header names its job, its state and why it waits, or the node it runs on."""
        slurm = seed_slurm(ctx)
        app = make_app(open_run=slurm["pending"])
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.screen.detail is not None, "detail")
            header = text_of(app.screen, "#run-header").splitlines()
            assert header[0] == "ff66aa77  sweep-queued  on hpc · launching"  # a plain command has no phase
            assert header[1] == "Slurm job 48213 · PENDING (Resources)"
            await pilot.press("escape")
            app.open_run(slurm["running"])
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert text_of(app.screen, "#run-header").splitlines()[1] == "Slurm job 48214 · RUNNING on gpu-node07"
            await pilot.press("escape")
            app.open_run(seeded["failed"])
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert "Slurm" not in text_of(app.screen, "#run-header")

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

    async def test_copy_id_traceback_and_pager_fallback(self, make_app, seeded, monkeypatch) -> None:
        """`y` copies the run id, `t` the root cause's traceback; `o` (the log in $PAGER) cannot suspend a
        headless app, so it shows (and copies) the command to run in a shell."""
        monkeypatch.setenv("PAGER", "less -R")
        app = make_app(open_run=seeded["failed"])
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.1)
            await pilot.press("y", "t")
            await pilot.press("o")
            assert copied[0] == "bb22cc33"
            assert copied[1].startswith("Traceback (most recent call last):") and "OutOfMemoryError" in copied[1]
            assert copied[2] == "eorch logs bb22cc33 | less -R"
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


class TestSimilarRuns:
    async def test_enter_on_a_similar_run_opens_it_with_what_changed(self, make_app, seeded) -> None:
        """The root-cause tab lists the earlier run that failed the same way (as `eorch similar` finds it)
        with what changed since; Enter on it opens that run; Escape comes back."""
        from textual.widgets import OptionList

        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            options = app.screen.query_one("#similar-runs", OptionList)
            await until(pilot, lambda: options.option_count == 1, "the similar run")
            option = options.get_option_at_index(0)
            assert option.id == seeded["earlier"] and "changed since:" in str(option.prompt)
            options.focus()
            await pilot.press("down", "enter")
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                        and app.screen.run_id == seeded["earlier"], "the earlier run")
            await pilot.press("escape")
            await until(pilot, lambda: app.screen.run_id == seeded["failed"], "back")


async def test_the_log_tab_shows_the_end_when_it_is_opened_after_the_root_cause(make_app, seeded) -> None:
    """A failed run opens on its root cause while its log loads in the hidden Log tab; `l` then shows the
    log's last line (it follows). The horizontal scrollbar a long line brings takes a row: the last line, the
    one with the root cause, used to be hidden under it."""
    app = make_app(open_run=seeded["failed"])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        pane = screen.query_one(LogPane)
        await until(pilot, lambda: len(pane.lines) >= 14, "log lines")
        assert screen.query_one(TabbedContent).active == "cause-tab"
        await pilot.press("l")
        log = pane.text_log
        await until(pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y, "the log's end")
        assert pane.following
