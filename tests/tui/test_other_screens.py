"""Launch, hosts, history and alerts screens, and the command palette entries."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.message import Message
from textual.widgets import DataTable, Input, Select, Static

from tui.data import parse_history_query
from tui.messages import HostChecked, LaunchPlanned, RunLaunched
from tui.screens.history import HistoryScreen
from tui.screens.hosts import HostsScreen
from tui.screens.launch import LaunchScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.runs_table import RunsTable


async def until(pilot, predicate, what: str, tries: int = 200) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def open_launch_on_local(pilot, app) -> LaunchScreen:  # type: ignore[no-untyped-def]
    """`n` opens the launch form; once both hosts are listed, pick the built-in `local` one."""
    await pilot.press("n")
    screen = app.screen
    assert isinstance(screen, LaunchScreen)
    await until(pilot, lambda: len(screen.facts) == 2, "hosts")
    screen.query_one("#launch-host", Select).value = "local"
    return screen


class TestLaunchScreen:
    async def test_shows_host_facts_and_inline_errors(self, make_app, seeded, tmp_path: Path) -> None:
        """Picking `gpu` shows its GPUs; a bad env var and an unclosed quote are reported under the form."""
        messages: list[Message] = []
        app = make_app()
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            await pilot.press("n")
            screen = app.screen
            assert isinstance(screen, LaunchScreen)
            await until(pilot, lambda: len(screen.facts) == 2, "hosts")
            screen.query_one("#launch-host", Select).value = "gpu"
            await pilot.pause(0.1)
            facts = text_of(screen, "#launch-facts")
            assert "GPU 0: NVIDIA H200 · 139.4 GiB free of 140.4 GiB" in facts
            assert "GPU 1: NVIDIA H200 · 62.3 GiB free" in facts and "512.0 GiB free" in facts
            screen.query_one("#launch-command", Input).value = "python 'unclosed"
            await until(pilot, lambda: "command: No closing quotation" in text_of(screen, "#launch-error"), "error")
            screen.query_one("#launch-command", Input).value = "python train.py --lr 3e-4"
            screen.query_one("#launch-env", Input).value = "1BAD=x"
            await until(pilot, lambda: "bad --env '1BAD'" in text_of(screen, "#launch-error"), "env error")
            screen.query_one("#launch-env", Input).value = "CUDA_VISIBLE_DEVICES=0"
            await until(pilot, lambda: text_of(screen, "#launch-error") == "", "no error")
            assert text_of(screen, "#launch-preview") == (
                "will run on gpu: python train.py --lr 3e-4\nenv CUDA_VISIBLE_DEVICES=0")
            assert any(isinstance(m, LaunchPlanned) and m.error is None for m in messages)
            # A spec file: validated, described as the recipe or command it holds.
            screen.query_one("#launch-command", Input).value = ""
            screen.query_one("#launch-spec", Input).value = str(Path("deploy/examples/command.toml").resolve())
            await until(pilot, lambda: "nvidia-smi-loop" in text_of(screen, "#launch-preview"), "spec preview")
            screen.query_one("#launch-spec", Input).value = str(tmp_path / "missing.toml")
            await until(pilot, lambda: "file not found" in text_of(screen, "#launch-error"), "spec error")
            await pilot.press("ctrl+s")
            assert "file not found" in text_of(screen, "#launch-error")
            assert isinstance(app.screen, LaunchScreen)

    async def test_launches_on_local_and_opens_the_run(self, make_app, seeded, tmp_path: Path) -> None:
        """ctrl+s launches on the built-in `local` host and opens the new run, whose log tails live."""
        messages: list[Message] = []
        app = make_app()
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            screen = await open_launch_on_local(pilot, app)
            code = "import time\nfor i in range(3): print('tick', i, flush=True); time.sleep(0.2)"
            screen.query_one("#launch-command", Input).value = f"{sys.executable} -c \"{code}\""
            screen.query_one("#launch-name", Input).value = "ticker"
            await until(pilot, lambda: "will run" in text_of(screen, "#launch-preview"), "preview")
            await pilot.press("ctrl+s")
            await until(pilot, lambda: any(isinstance(m, RunLaunched) for m in messages), "launch", tries=500)
            launched = next(m for m in messages if isinstance(m, RunLaunched))
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert app.screen.run_id == launched.run_id and launched.name == "ticker"
            from tui.widgets.log_pane import LogPane

            pane = app.screen.query_one(LogPane)
            await until(pilot, lambda: pane.lines[-1:] == ["tick 2"], "live log lines", tries=500)
            assert pane.lines == ["tick 0", "tick 1", "tick 2"]


    async def test_working_directory_is_passed_as_cwd(self, make_app, seeded, tmp_path: Path) -> None:
        """The optional cwd field is shown in the preview and the job starts there, as with `launch --cwd`."""
        workdir = tmp_path / "work dir"
        workdir.mkdir()
        messages: list[Message] = []
        app = make_app()
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            screen = await open_launch_on_local(pilot, app)
            screen.query_one("#launch-command", Input).value = f"{sys.executable} -c \"import os; print(os.getcwd())\""
            screen.query_one("#launch-cwd", Input).value = f"  {workdir}  "
            await until(pilot, lambda: f"cwd {workdir}" in text_of(screen, "#launch-preview"), "preview")
            assert text_of(screen, "#launch-error") == ""
            await pilot.press("ctrl+s")
            await until(pilot, lambda: any(isinstance(m, RunLaunched) for m in messages), "launch", tries=500)
            launched = next(m for m in messages if isinstance(m, RunLaunched))
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            from tui.widgets.log_pane import LogPane

            pane = app.screen.query_one(LogPane)
            await until(pilot, lambda: bool(pane.lines), "the job's output", tries=500)
            assert pane.lines == [str(workdir.resolve())]
            from orchestrator.store.models import Run

            with app.ctx.db() as s:
                assert s.get(Run, launched.run_id).cwd == str(workdir)

    async def test_missing_working_directory_is_an_inline_error(self, make_app, seeded, tmp_path: Path) -> None:
        """A cwd the host does not have fails the launch the way the CLI does; the form stays, error inline."""
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_launch_on_local(pilot, app)
            screen.query_one("#launch-command", Input).value = "true"
            screen.query_one("#launch-cwd", Input).value = str(tmp_path / "missing")
            await until(pilot, lambda: "will run" in text_of(screen, "#launch-preview"), "preview")
            await pilot.press("ctrl+s")
            await until(pilot, lambda: "launch failed" in text_of(screen, "#launch-error"), "error", tries=500)
            assert f"working directory does not exist on the host: {tmp_path / 'missing'}" in text_of(
                screen, "#launch-error")
            assert isinstance(app.screen, LaunchScreen)

    def test_plan_passes_cwd_like_the_cli(self, tmp_path: Path) -> None:
        """cwd is optional (blank: none), trimmed, and overrides a command spec's own cwd."""
        from tui.launch_plan import LaunchForm, plan

        assert plan(LaunchForm("local", command="true")).request.cwd is None
        assert plan(LaunchForm("local", command="true", cwd=" ~/work ")).request.cwd == "~/work"
        spec = tmp_path / "job.toml"
        spec.write_text('kind = "command"\nname = "j"\n[command]\nargv = ["true"]\ncwd = "/srv/a"\n')
        assert plan(LaunchForm("local", spec_path=str(spec))).request.cwd == "/srv/a"
        assert plan(LaunchForm("local", spec_path=str(spec), cwd="/srv/b")).request.cwd == "/srv/b"


class TestHostsScreen:
    async def test_lists_hosts_and_checks_local(self, make_app, seeded) -> None:
        """Stored facts show per GPU; `r` checks every host: `local` answers, `gpu` (no such box) fails."""
        messages: list[Message] = []
        app = make_app()
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            await pilot.press("h")
            screen = app.screen
            assert isinstance(screen, HostsScreen)
            table = screen.query_one(DataTable)
            await until(pilot, lambda: table.row_count == 2, "hosts")
            assert str(table.get_cell("gpu", "GPUs (free per GPU)")) == "2× NVIDIA H200: 139.4, 62.3 GiB free"
            assert "GPU 1: NVIDIA H200" in text_of(screen, "#host-facts")
            await pilot.press("r")
            await until(pilot, lambda: {m.host for m in messages if isinstance(m, HostChecked)} == {"gpu", "local"},
                        "checks", tries=1500)
            checked = {m.host: m for m in messages if isinstance(m, HostChecked)}
            assert checked["local"].facts is not None and checked["local"].facts["disk_free_bytes"] > 0
            assert checked["gpu"].facts is None and checked["gpu"].error
            await until(pilot, lambda: "down since" in str(table.get_cell("gpu", "reachability")), "down")
            # the table redraws per host as each check lands; under load `local` can still read "checking…"
            await until(pilot, lambda: str(table.get_cell("local", "reachability")) == "reachable", "local reachable")


class TestHistoryScreen:
    def test_query_parsing(self) -> None:
        """Known `key:value` tokens become filters; everything else is search text."""
        assert parse_history_query("status:failed host:gpu out of memory since:7d") == (
            {"status": "failed", "host": "gpu", "since": "7d"}, "out of memory")

    async def test_filters_and_opens(self, make_app, seeded) -> None:
        """`status:failed` narrows the history to the two failures; Enter opens one."""
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("s")
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            table = screen.query_one(RunsTable)
            await until(pilot, lambda: table.row_count == 5, "all runs")
            await pilot.press(*"status:failed")
            await until(pilot, lambda: table.row_count == 2, "failed runs")
            assert [str(k.value) for k in table.rows] == ["bb22cc33", "ee55ff66"]
            await pilot.press("enter", "enter")
            assert isinstance(app.screen, RunDetailScreen) and app.screen.run_id == "bb22cc33"


class TestPalette:
    async def test_system_commands_include_the_screens(self, make_app, seeded) -> None:
        """The command palette offers launch, hosts, history and alerts."""
        app = make_app()
        async with app.run_test(size=(80, 24)):
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert {"Launch a run", "Hosts", "History", "Alerts", "Quit"} <= titles
