"""The runs screen against a seeded, migrated history."""

from __future__ import annotations

import re

from seed import seed_slurm
from textual.message import Message
from textual.widgets import Input, Static

from tui.messages import RunsLoaded
from tui.screens.run_detail import RunDetailScreen
from tui.screens.runs import RunsScreen
from tui.widgets.runs_table import RunsTable


async def wait_rows(pilot, table: RunsTable, count: int) -> None:
    for _ in range(100):
        if table.row_count == count:
            return
        await pilot.pause(0.02)
    raise AssertionError(f"table has {table.row_count} rows, wanted {count}")


def column_labels(table: RunsTable) -> list[str]:
    return [str(column.label) for column in table.ordered_columns]


async def until_columns(pilot, table: RunsTable, predicate) -> None:
    for _ in range(100):
        if predicate(column_labels(table)):
            return
        await pilot.pause(0.02)
    raise AssertionError(f"columns are {column_labels(table)}")


class TestRunsScreen:
    async def test_lists_runs_newest_first_with_progress_and_cause(self, make_app, seeded) -> None:
        """Rows come from the history newest first; the running run shows its shard bar and ETA."""
        messages: list[Message] = []
        app = make_app()
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            keys = [str(r.value) for r in table.rows]
            assert keys == ["aa11bb22", "bb22cc33", "cc33dd44", "dd44ee55", "ee55ff66"]
            progress = str(table.get_cell("aa11bb22", "progress"))
            assert "12/35" in progress and progress.endswith(" 11m")
            assert str(table.get_cell("aa11bb22", "age")) == "20m00s"
            assert str(table.get_cell("bb22cc33", "root cause")) == "cuda-oom"
            assert str(table.get_cell("bb22cc33", "status")) == "failed"
            loaded = [m for m in messages if isinstance(m, RunsLoaded)]
            assert loaded and len(loaded[-1].runs) == 5

    async def test_resize_switches_the_layout_and_keeps_the_cursor(self, make_app, seeded) -> None:
        """Narrowing the terminal under 110 columns drops the host column and narrows the rest, keeping the whole
        short id and whole numbers; widening brings the host back; the cursor stays on the run it was on, and
        Enter opens that run."""
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            assert column_labels(table)[0] == "id"
            await pilot.press("down", "down")
            assert table.selected_run_id == "cc33dd44"
            await pilot.resize_terminal(80, 24)
            await until_columns(pilot, table, lambda labels: "host" not in labels)
            assert column_labels(table)[0] == "id" and str(table.get_cell("aa11bb22", "id")) == "aa11bb22"
            assert table.row_count == 5 and table.selected_run_id == "cc33dd44"
            progress = str(table.get_cell("aa11bb22", "progress"))
            assert re.fullmatch(r"12/35 \d+[smhd]", progress), progress  # one unit: never `4m1` for `4m19s`
            assert all(len(str(table.get_cell(r, "age"))) <= 4 for r in ("aa11bb22", "cc33dd44"))
            await pilot.resize_terminal(130, 30)
            await until_columns(pilot, table, lambda labels: "host" in labels)
            assert table.selected_run_id == "cc33dd44" and table.cursor_row == 2
            assert str(table.get_cell("cc33dd44", "id")) == "cc33dd44"
            await pilot.press("enter")
            assert isinstance(app.screen, RunDetailScreen) and app.screen.run_id == "cc33dd44"

    async def test_slurm_column_where_there_is_room(self, make_app, seeded, ctx) -> None:
        """From 140 columns, Slurm runs show job id, state code and pending reason or node; narrower, the
        column goes (the run detail has it); without Slurm runs there is no such column."""
        slurm = seed_slurm(ctx)
        app = make_app()
        async with app.run_test(size=(150, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 7)
            labels = column_labels(table)
            assert labels[labels.index("status") + 1] == "slurm"
            assert str(table.get_cell(slurm["pending"], "slurm")) == "48213 PD Resources"
            assert str(table.get_cell(slurm["running"], "slurm")) == "48214 R gpu-node07"
            assert str(table.get_cell("bb22cc33", "slurm")) == ""
            await pilot.press("slash", *"oom")  # only runs without a Slurm job left
            await wait_rows(pilot, table, 2)
            assert "slurm" not in column_labels(table)
            await pilot.press("escape")
            await wait_rows(pilot, table, 7)
            assert "slurm" in column_labels(table)
            await pilot.resize_terminal(120, 40)
            await until_columns(pilot, table, lambda labels: "slurm" not in labels)
            assert column_labels(table)[0] == "id"

    async def test_slash_filters_and_escape_clears(self, make_app, seeded) -> None:
        """`/` opens the filter; words narrow the rows; Escape shows all again."""
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            await pilot.press("slash")
            assert app.screen.query_one("#runs-filter", Input).has_focus
            await pilot.press(*"oom")
            await wait_rows(pilot, table, 2)
            assert "filter 'oom'" in str(app.screen.query_one("#runs-status", Static).content)
            await pilot.press("escape")
            await wait_rows(pilot, table, 5)
            assert table.has_focus

    async def test_enter_opens_detail_and_escape_returns(self, make_app, seeded) -> None:
        """Enter on the second row opens that run; Escape goes back to the table."""
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            await pilot.press("down", "enter")
            assert isinstance(app.screen, RunDetailScreen) and app.screen.run_id == "bb22cc33"
            await pilot.press("escape")
            assert isinstance(app.screen, RunsScreen)

    async def test_status_change_raises_alert_and_rings_on_failure(self, make_app, seeded, ctx) -> None:
        """A run that turns failed between refreshes becomes a toast, an alerts-panel row and a bell."""
        from tui.messages import AlertRaised

        messages: list[Message] = []
        app = make_app()
        bells: list[int] = []
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 5)
            from orchestrator.store.models import Run

            with ctx.db() as s:
                run = s.get(Run, "aa11bb22")
                run.status, run.exit_code = "failed", 3
            for _ in range(100):
                if any(isinstance(m, AlertRaised) for m in messages):
                    break
                await pilot.pause(0.02)
            alert = next(m for m in messages if isinstance(m, AlertRaised))
            assert alert.run_id == "aa11bb22" and alert.severity == "error"
            assert bells == [1]
            await pilot.press("a")
            from textual.widgets import DataTable

            table = app.screen.query_one(DataTable)
            await pilot.pause(0.2)
            assert table.row_count == 2  # this session's alert, then the recorded one
            assert "aa11bb22 failed" in str(table.get_cell_at((0, 2)))
