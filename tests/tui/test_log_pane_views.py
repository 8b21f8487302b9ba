"""The log pane for tracebacks: `w` wraps long lines, `x` hides vLLM's process/record prefixes."""

from __future__ import annotations

from test_run_detail import until

from tui.widgets.log_pane import LogPane


async def open_log(app, pilot) -> LogPane:
    pane = app.screen.query_one(LogPane)
    await until(pilot, lambda: len(pane.lines) >= 14, "log lines")
    await pilot.press("l")
    return pane


class TestLogPaneViews:
    async def test_x_hides_the_prefixes_and_search_follows_the_shown_text(self, make_app, seeded) -> None:
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(120, 40)) as pilot:
            pane = await open_log(app, pilot)
            shown = [strip.text for strip in pane.text_log.lines]
            assert any("(EngineCore_DP0 pid=4242) INFO" in line for line in shown)
            await pilot.press("x")
            await pilot.pause(0.1)
            shown = [strip.text.rstrip() for strip in pane.text_log.lines]
            assert not any("pid=4242" in line or "[core.py:" in line for line in shown)
            assert "prefixes hidden" in str(pane.query_one("#log-status").content)
            assert len(pane.lines) == 14 and pane.lines[1].startswith("(EngineCore_DP0 pid=4242) INFO")  # kept
            await pilot.press("slash", *"pid=", "enter")
            assert "search 'pid=': 0" in str(pane.query_one("#log-status").content)
            await pilot.press("x")
            await pilot.pause(0.1)
            assert any("pid=4242" in strip.text for strip in pane.text_log.lines)

    async def test_w_wraps_long_lines_and_back(self, make_app, seeded) -> None:
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(60, 30)) as pilot:
            pane = await open_log(app, pilot)
            log = pane.text_log
            assert len(log.lines) == 14 and log.virtual_size.width > log.scrollable_content_region.width
            await pilot.press("w")
            await until(pilot, lambda: len(log.lines) > 14, "wrapped rows")
            assert log.virtual_size.width <= log.scrollable_content_region.width  # nothing off to the right
            assert "wrapped" in str(pane.query_one("#log-status").content)
            await pilot.press("e")  # the jump to the root cause still lands on it
            target = pane._row_of(pane.error_line() or 0)
            assert target >= pane.error_line() and log.scroll_y <= target
            await pilot.press("w")
            await until(pilot, lambda: len(log.lines) == 14, "one row per line again")
