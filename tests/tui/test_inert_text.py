"""A job's root cause and a run's name reach the TUI inert: no escape sequence is drawn to the terminal."""

from __future__ import annotations

import re

from textual.widgets import Static

from orchestrator.store.models import Run
from tui.screens.run_detail import RunDetailScreen

TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = "\x1b]52;c;eA==\x07\x1b]2;pwned\x07\x1bc\x1b#8\x1b(0\x9b2J"


async def test_root_cause_pane_and_header_are_inert(make_app, seeded, ctx) -> None:
    """An OSC 52 / title / reset in the recorded root cause and name is gone; the words around it stay."""
    with ctx.db() as s:
        run = s.get(Run, seeded["failed"])
        run.name = f"serve{HOSTILE}-70b"
        run.root_cause = {**run.root_cause, "message": f"bad {HOSTILE}request",
                          "traceback": f"Traceback (most recent call last):\nValueError: bad {HOSTILE}request"}
    app = make_app(open_run=seeded["failed"])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        for _ in range(150):
            cause = str(screen.query_one("#cause-text", Static).content)
            if "bad request" in cause:
                break
            await pilot.pause(0.02)
        header = str(screen.query_one("#run-header", Static).content)
        assert "ValueError: bad request" in cause and "serve-70b" in header
        assert TERMINAL_CONTROL.search(cause) is None and TERMINAL_CONTROL.search(header.replace("\n", "")) is None
