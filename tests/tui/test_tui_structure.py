"""The TUI's structure: screens built from explicit dependencies, a worker's error as a modal, the
snapshot-diff toasts decided by ``alertrules``."""

from __future__ import annotations

from seed import NOW
from sqlalchemy import text
from test_runs_screen import wait_rows
from textual.app import App
from textual.message import Message
from textual.widgets import Static

from orchestrator.alerts import rules as alertrules
from orchestrator.context import Context
from orchestrator.store.models import Run
from tui.data import load_runs
from tui.deps import ScreenDeps
from tui.logfeed import LogFeed
from tui.messages import AlertRaised, RunOpenRequested, RunsRefreshed
from tui.screens.alerts import AlertsScreen
from tui.screens.confirm import MessageScreen
from tui.screens.runs import RunsScreen
from tui.widgets.runs_table import RunsTable


async def until(pilot, predicate, what: str, tries: int = 250) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def deps_for(ctx: Context, monitor_state: str = "off") -> ScreenDeps:
    return ScreenDeps(ctx, lambda: NOW, lambda: monitor_state, LogFeed(ctx.session))


class TestConstructedScreens:
    async def test_runs_screen_in_a_bare_app(self, ctx, seeded) -> None:
        """A runs screen needs no EorchApp: its dependencies and first snapshot come in its constructor,
        and Enter asks for the run with a message instead of calling the app."""
        asked: list[Message] = []
        snapshot = RunsRefreshed(load_runs(ctx), NOW)
        app: App[None] = App()
        async with app.run_test(size=(120, 40), message_hook=asked.append) as pilot:
            await app.push_screen(RunsScreen(deps_for(ctx, "read-only"), snapshot))
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            status = str(app.screen.query_one("#runs-status", Static).content)
            assert "another process follows the runs" in status  # the state handed in, not an app's
            await pilot.press("down", "enter")
            await until(pilot, lambda: any(isinstance(m, RunOpenRequested) for m in asked), "open request")
            assert next(m for m in asked if isinstance(m, RunOpenRequested)).run_id == "bb22cc33"

    async def test_alerts_screen_shows_the_alerts_handed_to_it(self, ctx, seeded) -> None:
        """The alerts screen lists the session's alerts it was given, then the recorded ones."""
        from tui.data import AlertRow

        app: App[None] = App()
        async with app.run_test(size=(120, 40)) as pilot:
            given = [AlertRow("run x failed", "body", "error", NOW, "x")]
            await app.push_screen(AlertsScreen(deps_for(ctx), given))
            table = app.screen.query_one("#alerts-table")
            await until(pilot, lambda: table.row_count == 2, "two alert rows")
            assert "run x failed" in str(table.get_cell_at((0, 2)))


class TestWorkerErrors:
    async def test_a_failing_data_call_shows_a_modal_and_the_dashboard_stays(self, make_app, seeded, ctx) -> None:
        """The alerts table is gone from the history: loading the alerts raises (not an EorchError); the
        error shows in a modal and the runs screen goes on refreshing after it is closed."""
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 5)
            with ctx.db() as s:
                s.execute(text("DROP TABLE alert_deliveries"))
                s.execute(text("DROP TABLE alerts"))
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, MessageScreen), "the error modal")
            body = str(app.screen.query_one("#confirm-question", Static).content)
            assert "OperationalError" in body and "no such table" in body
            assert app.is_running
            await pilot.press("escape", "escape")
            assert isinstance(app.screen, RunsScreen)
            with ctx.db() as s:
                s.get(Run, "aa11bb22").name = "renamed while the modal was up"
            await until(pilot, lambda: any(r.name.startswith("renamed") for r in app.runs), "a refresh after it")


class TestRuleToasts:
    async def test_a_run_that_fails_is_toasted_as_alertrules_says_once(self, make_app, seeded, ctx) -> None:
        """Without the monitor, a status change is judged by alertrules: the toast's body is the rules'
        text, and a second flip to failed raises nothing more (the rules' dedup key)."""
        messages: list[Message] = []
        app = make_app()
        app.bell = lambda: None  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 5)

            def set_status(status: str, exit_code: int | None) -> None:
                with ctx.db() as s:
                    run = s.get(Run, "aa11bb22")
                    run.status, run.exit_code = status, exit_code

            def alerts() -> list[AlertRaised]:
                return [m for m in messages if isinstance(m, AlertRaised)]

            set_status("failed", 3)
            await until(pilot, lambda: alerts(), "the alert")
            set_status("running", None)
            await until(pilot, lambda: next(r for r in app.runs if r.id == "aa11bb22").status == "running",
                        "running again")
            set_status("failed", 3)
            await until(pilot, lambda: next(r for r in app.runs if r.id == "aa11bb22").status == "failed",
                        "failed again")
            await pilot.pause(0.3)
            (alert,) = [a for a in alerts() if a.title.endswith(" failed")]  # running again may be "stalled"
            row = next(r for r in app.runs if r.id == "aa11bb22")
            snapshot = alertrules.RunSnapshot(run_id=row.id, name=row.name, host=row.host, status="failed",
                                              phase=row.phase, shards_done=row.shards_done,
                                              shards_total=row.shards_total, exit_code=3,
                                              started_at=row.started_at)
            _title, body = alertrules.format_run_alert(snapshot, alertrules.AlertKind.FAILED, NOW)
            assert alert.body == body and "Exit code: 3" in alert.body
            assert alert.severity == "error" and alert.title == "run aa11bb22 failed"
