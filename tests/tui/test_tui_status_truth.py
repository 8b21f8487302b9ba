"""The TUI without a monitor tells the same truth as `eorch runs`: it checks the hosts, or says how old it is."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

from helpers import wait_for
from test_live import until
from textual.css.query import NoMatches
from textual.widgets import Static

from orchestrator.context import Context
from tui.app import EorchApp
from tui.screens.run_detail import RunDetailScreen

EXITS_3 = "import sys; print('working', flush=True); sys.exit(3)"


def _launch(cli, tmp_path: Path, *argv: str) -> dict:
    cli("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
    return json.loads(cli("launch", "--host", "gpu", "--json", "--", *argv).stdout)


def _text(screen, selector: str) -> str:
    """The text a Static shows; "" while the screen is not composed yet."""
    try:
        return str(screen.query_one(selector, Static).render())
    except NoMatches:
        return ""


class TestReadOnlyChecks:
    async def test_an_exit_no_monitor_saw_shows_as_failed(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """`eorch tui --read-only` with no monitor anywhere: the ended run is drained and shown `failed · exit 3`."""
        run = _launch(cli, tmp_path, sys.executable, "-c", EXITS_3)
        rc = Path(run["remote_dir"]) / "rc"
        wait_for(rc.exists, 60, "the job to exit")
        app = EorchApp(Context.load(), refresh_s=0.1, monitor="check", open_run=run["id"])
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, RunDetailScreen)
            await until(pilot, lambda: screen.detail is not None and screen.detail.row.status == "failed",
                        "failed status", seconds=60)
            assert screen.detail is not None and screen.detail.row.exit_code == 3
            # The round's state message is posted after it drained the run: a refresh may show `failed` first.
            await until(pilot, lambda: app.monitor_state == "checked", "the checked state", seconds=30)
            await until(pilot, lambda: "as of" not in _text(screen, "#run-header"), "a header without as-of", 30)

    async def test_an_unreachable_host_is_labelled_as_of(self, eorch_home: Path, tmp_path: Path, cli, sshd) -> None:
        """A host that cannot be reached: `running?` and "as of HH:MM, no monitor running; gpu unreachable"."""
        run = _launch(cli, tmp_path, "sleep", "600")
        config = tmp_path / "ssh_config"
        good = config.read_text()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        config.write_text(good.replace(f"Port {sshd.port}", f"Port {closed}"))
        try:
            app = EorchApp(Context.load(), refresh_s=0.1, monitor="check")
            async with app.run_test(size=(160, 30)) as pilot:
                await until(pilot, lambda: "as of" in _text(app.screen, "#runs-status"), "the as-of note", 60)
                status = _text(app.screen, "#runs-status")
                assert "no monitor running" in status and "gpu unreachable" in status
                app.open_run(run["id"])
                await until(pilot, lambda: isinstance(app.screen, RunDetailScreen)
                            and "as of" in _text(app.screen, "#run-header"), "the note in the detail", 30)
                assert "no monitor running" in _text(app.screen, "#run-header")
        finally:
            config.write_text(good)
            cli("cancel", run["id"], check=False)
