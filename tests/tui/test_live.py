"""Live updates through the loopback sshd: a real job followed by the in-process monitor and the log pane."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from textual.message import Message

from orchestrator.context import Context
from orchestrator.monitoring.lockfile import MonitorLock
from tui.app import EorchApp
from tui.messages import AlertRaised, LogLinesReceived, MonitorNoticed, MonitorStateChanged
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.log_pane import LogPane

JOB = "import time\nfor i in range({n}):\n    print('step', i, flush=True)\n    time.sleep({pause})\n{tail}"


def launch_on_testbox(eorch, tmp_path: Path, n: int, pause: float, tail: str = "") -> str:
    eorch("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
    out = eorch("launch", "--host", "gpu", "--json", "--name", "stepper", "--",
                sys.executable, "-c", JOB.format(n=n, pause=pause, tail=tail))
    return str(json.loads(out.stdout)["id"])


async def until(pilot, predicate, what: str, seconds: float = 30) -> None:
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class TestLive:
    async def test_follows_a_failing_job_over_ssh(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """The TUI takes the monitor lock, tails the log over SSH, and turns the failure into an alert."""
        gate = tmp_path / "gate"
        tail = (f"import os\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)\n"
                "print('after the gate', flush=True)\nraise SystemExit(3)")
        run_id = launch_on_testbox(cli, tmp_path, 4, 0.05, tail)
        messages: list[Message] = []
        app = EorchApp(Context.load(), refresh_s=0.1, open_run=run_id)
        bells: list[int] = []
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        async with app.run_test(size=(100, 30), message_hook=messages.append) as pilot:
            screen = app.screen
            assert isinstance(screen, RunDetailScreen)
            await until(pilot, lambda: app.monitor_state == "following", "monitor")
            pane = screen.query_one(LogPane)
            await until(pilot, lambda: pane.lines[-1:] == ["step 3"], "log lines over ssh")
            assert pane.lines == [f"step {i}" for i in range(4)]
            gate.touch()  # the job goes on only now, while the TUI is following
            await until(pilot, lambda: pane.lines[-1:] == ["after the gate"], "the line after the gate")
            await until(pilot, lambda: screen.detail is not None and screen.detail.row.status == "failed",
                        "failed status")
            await until(pilot, lambda: any(isinstance(m, AlertRaised) and m.run_id == run_id for m in messages),
                        "alert")
            assert bells  # failure rings the bell
            assert any(isinstance(m, MonitorNoticed) for m in messages)
            assert sum(isinstance(m, LogLinesReceived) for m in messages) >= 2  # lines arrived as they came
            assert screen.detail.row.exit_code == 3

    async def test_read_only_when_another_process_follows_and_quitting_leaves_the_job(
        self, eorch_home: Path, tmp_path: Path, cli
    ) -> None:
        """With the monitor lock held elsewhere the TUI only reads; quitting it does not stop the job."""
        run_id = launch_on_testbox(cli, tmp_path, 40, 0.1)
        ctx = Context.load()
        lock = MonitorLock(ctx.settings.monitor_lock)
        lock.acquire()
        try:
            messages: list[Message] = []
            app = EorchApp(ctx, refresh_s=0.1, open_run=run_id)
            async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
                await until(pilot, lambda: app.monitor_state == "read-only", "read-only")
                pane = app.screen.query_one(LogPane)
                await until(pilot, lambda: len(pane.lines) >= 3, "log lines while read-only")
                states = [m.state for m in messages if isinstance(m, MonitorStateChanged)]
                assert "following" not in states
        finally:
            lock.release()
        record = json.loads(cli("show", run_id, "--json", "--no-refresh").stdout)
        assert record["status"] == "running"  # nobody recorded an end; the job was left alone
        done = cli("watch", run_id, "--until-done", check=False)
        assert done.returncode == 0
        final = json.loads(cli("show", run_id, "--json").stdout)
        assert final["status"] == "succeeded" and final["exit_code"] == 0
