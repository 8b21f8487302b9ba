"""Control from the list, continued: `r` reruns (runs list; `R` in a run's detail), `m` mutes a run's alerts,
and the alert settings screen (channels without their tokens, a test alert to one, the muted runs)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from seed import NOW
from test_live import launch_on_testbox, until
from test_runs_screen import wait_rows
from textual.widgets import Button, DataTable, Static

from orchestrator.context import Context
from orchestrator.store.models import Run
from tui.app import EorchApp
from tui.screens.alert_settings import AlertSettingsScreen
from tui.screens.alerts import AlertsScreen
from tui.screens.rerun import RerunScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.runs_table import RunsTable

SECRET = "T0pS3cretT0ken"


class Receiver:
    """A json:// endpoint on 127.0.0.1 keeping every body POSTed to it."""

    def __init__(self) -> None:
        received = self.received = []  # type: list[dict]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                received.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def rerun_of(ctx: Context, run_id: str) -> str | None:
    with ctx.db() as s:
        run = s.get(Run, run_id)
        assert run is not None
        return run.rerun_of


def muted_at(ctx: Context, run_id: str) -> object:
    with ctx.db() as s:
        run = s.get(Run, run_id)
        assert run is not None
        return run.alerts_muted_at


def run_count(ctx: Context) -> int:
    with ctx.db() as s:
        return len(list(s.query(Run)))


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


class TestRerun:
    async def test_r_in_the_list_and_R_in_the_detail_rerun_the_real_job(self, eorch_home: Path, tmp_path: Path,
                                                                        cli) -> None:
        """Over the loopback sshd: `r` on a run, confirm, and its rerun opens; `R` there reruns the rerun."""
        first = launch_on_testbox(cli, tmp_path, 1, 0.01)
        ctx = Context.load()
        app = EorchApp(ctx, refresh_s=0.1)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 1)
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, RerunScreen), "the question")
            modal = app.screen
            await until(pilot, lambda: not modal.query_one("#rerun-yes", Button).disabled, "the plan")
            assert f"rerun of {first} (stepper) on gpu" in text_of(modal, "#rerun-plan")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen), "the new run", seconds=60)
            second = app.screen.run_id
            assert second != first and rerun_of(ctx, second) == first
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, RerunScreen), "the question in the detail")
            modal = app.screen
            await until(pilot, lambda: not modal.query_one("#rerun-yes", Button).disabled, "the plan")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.run_id != second,
                        "the rerun of the rerun", seconds=60)
            third = app.screen.run_id
            assert rerun_of(ctx, third) == second
            await until(pilot, lambda: {r.id: r.status for r in app.runs}.get(third) == "succeeded", "it ran",
                        seconds=60)
        assert json.loads(cli("show", third, "--json").stdout)["command"] == \
            json.loads(cli("show", first, "--json").stdout)["command"]

    async def test_no_starts_nothing_and_a_run_that_cannot_be_rerun_says_why(self, make_app, ctx, seeded) -> None:
        """`n` closes the question with nothing started; a recipe run that recorded no spec says so, `y` does
        nothing."""
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.screen.query_one(RunsTable)
            await wait_rows(pilot, table, 5)
            await pilot.press("down", "r")  # the failed serve-llama-70b
            await until(pilot, lambda: isinstance(app.screen, RerunScreen), "the question")
            modal = app.screen
            await until(pilot, lambda: not modal.query_one("#rerun-yes", Button).disabled, "the plan")
            assert "rerun of bb22cc33 (serve-llama-70b) on local: vllm serve" in text_of(modal, "#rerun-plan")
            await pilot.press("n")
            await until(pilot, lambda: not isinstance(app.screen, RerunScreen), "closed")
            await pilot.press("up", "r")  # the eagle3 run seeded without its spec
            await until(pilot, lambda: isinstance(app.screen, RerunScreen), "the question")
            modal = app.screen
            await until(pilot, lambda: "recorded no spec" in text_of(modal, "#rerun-error"), "the reason")
            await pilot.press("y")
            await pilot.pause(0.2)
            assert isinstance(app.screen, RerunScreen) and modal.query_one("#rerun-yes", Button).disabled
        assert run_count(ctx) == 5


class TestMute:
    async def test_m_mutes_and_unmutes_in_the_list_and_the_detail(self, make_app, ctx, seeded) -> None:
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_rows(pilot, app.screen.query_one(RunsTable), 5)
            await pilot.press("m")
            await until(pilot, lambda: muted_at(ctx, seeded["running"]) is not None, "muted")
            await pilot.press("m")
            await until(pilot, lambda: muted_at(ctx, seeded["running"]) is None, "unmuted")
            app.open_run(seeded["failed"])
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen), "the detail")
            await pilot.press("m")
            await until(pilot, lambda: muted_at(ctx, seeded["failed"]) is not None, "muted from the detail")


def configure(home: Path, *urls: str) -> None:
    with (home / "config.toml").open("a") as f:
        f.write(f"\n[alerts]\nurls = [{', '.join(json.dumps(u) for u in urls)}]\ndesktop = false\nretries = 1\n"
                "backoff_s = 0.05\n")


def app_with_alerts() -> EorchApp:
    """The seeded app with a context read after the test wrote its `[alerts]`."""
    return EorchApp(Context.load(), clock=lambda: NOW, refresh_s=0.1, monitor="off")


def mute_at_now(ctx: Context, run_id: str) -> None:
    with ctx.db() as s:
        run = s.get(Run, run_id)
        assert run is not None
        run.alerts_muted_at = NOW


async def press_a_then_s(app: EorchApp, pilot) -> None:
    """From the runs list: `a` opens the alerts, `s` their settings."""
    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, AlertsScreen), "alerts")
    await pilot.press("s")


async def open_settings(app: EorchApp, pilot) -> AlertSettingsScreen:
    await press_a_then_s(app, pilot)
    await until(pilot, lambda: isinstance(app.screen, AlertSettingsScreen), "settings")
    screen = app.screen
    assert isinstance(screen, AlertSettingsScreen)
    await until(pilot, lambda: screen.query_one("#channels-table", DataTable).row_count == 2, "channels")
    return screen


class TestAlertSettings:
    async def test_channels_masked_test_alert_and_unmute(self, ctx, seeded, tui_home: Path) -> None:
        """The channels show without their tokens (on screen and in a screenshot); `t` sends a test alert to
        the highlighted channel only; `u` unmutes a muted run."""
        receiver = Receiver()
        try:
            configure(tui_home, f"json://127.0.0.1:{receiver.port}/hook-{SECRET}",
                      f"json://user:{SECRET}@{SECRET.lower()}.hooks.example.com/x")
            mute_at_now(ctx, seeded["failed"])
            app = app_with_alerts()
            async with app.run_test(size=(120, 40)) as pilot:
                screen = await open_settings(app, pilot)
                channels = screen.query_one("#channels-table", DataTable)
                names = [str(channels.get_row_at(i)[0]) for i in range(2)]
                assert names == ["json://127.0.0.1", "json://….example.com"]
                muted = screen.query_one("#muted-table", DataTable)
                assert str(muted.get_row_at(0)[0]) == seeded["failed"]
                assert SECRET not in app.export_screenshot() and SECRET.lower() not in app.export_screenshot()
                await pilot.press("t")
                await until(pilot, lambda: "delivered" in text_of(screen, "#channel-result"), "the test alert")
                assert text_of(screen, "#channel-result") == "test alert to json://127.0.0.1: delivered"
                assert [m["title"] for m in receiver.received] == ["eorch: test alert"]
                assert SECRET not in app.export_screenshot()
                muted.focus()
                await pilot.press("u")
                await until(pilot, lambda: muted_at(ctx, seeded["failed"]) is None, "unmuted")
                await until(pilot, lambda: str(muted.get_row_at(0)[1]) == "none", "the list emptied")
        finally:
            receiver.stop()

    async def test_an_unexpected_error_while_loading_shows_a_modal_and_the_dashboard_stays(
            self, ctx, seeded, tui_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A bug in the settings' loader (not an EorchError) is a modal naming the error; Escape closes it and
        the dashboard goes on (the worker used to keep `exit_on_error=True`: the app quit)."""
        from orchestrator.services import mutes
        from tui.screens.confirm import MessageScreen

        def broken(ctx: Context) -> list[object]:
            raise RuntimeError("the muted list cannot be read")

        monkeypatch.setattr(mutes, "muted_runs", broken)
        app = app_with_alerts()
        async with app.run_test(size=(120, 40)) as pilot:
            await press_a_then_s(app, pilot)
            await until(pilot, lambda: isinstance(app.screen, MessageScreen), "the error's modal")
            modal = app.screen
            assert isinstance(modal, MessageScreen)
            assert modal.title_text == "Something went wrong (alert-settings)"
            assert "RuntimeError: the muted list cannot be read" in modal.body
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, AlertSettingsScreen), "back to the settings")
            assert app.is_running


@pytest.mark.parametrize("size", SIZES)
def test_alert_settings_snapshot(snap_compare, ctx, seeded, tui_home: Path, size) -> None:
    """You should see `Channels`, a table of two channels `json://127.0.0.1` (kinds `all`) and
    `slack://…` (kinds `failed, lost`), via apprise, no token anywhere; `Muted runs` with train resnet (cc33dd44,
    local, succeeded, muted since 2025-01-10 12:00:00); the footer with Back, Send test, Unmute run, Reload."""
    with (tui_home / "config.toml").open("a") as f:
        f.write(f'\n[alerts]\nurls = ["json://127.0.0.1:9/hook-{SECRET}", '
                f'{{ url = "slack://{SECRET}/B0/C0", kinds = ["failed", "lost"] }}]\ndesktop = false\n')
    mute_at_now(ctx, seeded["succeeded"])
    app = app_with_alerts()

    async def run_before(pilot) -> None:
        screen = await open_settings(app, pilot)
        await until(pilot, lambda: screen.query_one("#muted-table", DataTable).row_count == 1, "muted")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
