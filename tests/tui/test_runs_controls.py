"""Control from the runs list: `?` for the keys, `f` status filter, `o` sort, `c` cancel (asks first)."""

from __future__ import annotations

import json
from pathlib import Path

from test_live import launch_on_testbox, until
from test_runs_screen import wait_rows
from textual.widgets import Static

from orchestrator.context import Context
from orchestrator.services.runview import RunView
from tui.app import EorchApp
from tui.listing import select_runs
from tui.screens.confirm import ConfirmScreen
from tui.widgets.runs_table import RunsTable


def shown_ids(table: RunsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


class TestSelectRuns:
    def test_status_filter_and_sorts(self) -> None:
        from datetime import datetime, timedelta

        t = datetime(2026, 1, 1)
        runs = [RunView("b2", "beta", "h2", "failed", "failed", t), RunView("a1", "alpha", "h1", "running", "loading",
                t - timedelta(hours=1)), RunView("c3", "gamma", "h1", "succeeded", "stopped", t + timedelta(hours=1))]
        assert [r.id for r in select_runs(runs)] == ["c3", "b2", "a1"]
        assert [r.id for r in select_runs(runs, status_filter="active")] == ["a1"]
        assert [r.id for r in select_runs(runs, status_filter="failed")] == ["b2"]
        assert [r.id for r in select_runs(runs, sort="name")] == ["a1", "b2", "c3"]
        assert select_runs(runs, sort="status")[0].id == "a1"  # active runs first
        assert [r.id for r in select_runs(runs, sort="host", text="h1")] == ["c3", "a1"]


class TestRunsControls:
    async def test_f_filters_by_status_and_o_sorts(self, make_app, seeded) -> None:
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            await pilot.press("f")  # active
            await wait_rows(pilot, table, 1)
            assert shown_ids(table) == [seeded["running"]]
            await pilot.press("f")  # failed
            await wait_rows(pilot, table, 2)
            assert set(shown_ids(table)) == {seeded["failed"], seeded["earlier"]}
            assert "status failed" in str(app.screen.query_one("#runs-status", Static).content)
            for _ in range(4):  # lost, cancelled, succeeded, all
                await pilot.press("f")
            await wait_rows(pilot, table, 5)
            await pilot.press("o", "o")  # status, then name
            await pilot.pause(0.2)
            names = [str(table.get_row(key)[1]) for key in shown_ids(table)]
            assert names == sorted(names, key=str.lower)
            assert "sorted by name" in str(app.screen.query_one("#runs-status", Static).content)

    async def test_question_mark_shows_the_keys_of_the_view(self, make_app, seeded) -> None:
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 5)
            await pilot.press("question_mark")
            await until(pilot, lambda: bool(app.screen.query("HelpPanel")), "the keys panel")
            await pilot.press("question_mark")
            await until(pilot, lambda: not app.screen.query("HelpPanel"), "the panel closed")

    async def test_c_on_an_ended_run_only_tells(self, make_app, seeded) -> None:
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            await pilot.press("down")  # the failed run
            await pilot.press("c")
            assert not isinstance(app.screen, ConfirmScreen)


class TestCancelFromTheList:
    async def test_c_asks_then_cancels_the_real_job(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """Over the loopback sshd: `c` on the running job, confirm, and the job ends cancelled."""
        run_id = launch_on_testbox(cli, tmp_path, 600, 0.1)
        app = EorchApp(Context.load(), refresh_s=0.1)
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 1)
            await until(pilot, lambda: any(r.id == run_id and r.status == "running" for r in app.runs), "running")
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
            await pilot.press("y")
            await until(pilot, lambda: any(r.id == run_id and r.status == "cancelled" for r in app.runs),
                        "cancelled", seconds=60)
        assert json.loads(cli("show", run_id, "--json").stdout)["status"] == "cancelled"
