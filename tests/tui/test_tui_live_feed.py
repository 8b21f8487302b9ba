"""Log lines over the loopback sshd: the pane and the merged view show the follower's own lines while this
app follows the runs (no tail of their own), and a reading follower's when another process does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from test_live import until
from textual.message import Message
from textual.widgets import RichLog
from textual.worker import WorkerState

from orchestrator.context import Context
from orchestrator.core.notices import LogLinesRead
from orchestrator.monitoring.lockfile import MonitorLock
from orchestrator.store.models import Run
from tui.app import EorchApp
from tui.messages import MonitorNoticed
from tui.screens.merged_log import MergedLogScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.log_pane import LogPane

GATED = ("import os, time\nfor i in range(3):\n    print({tag!r}, 'before', i, flush=True)\n"
         "while not os.path.exists({gate!r}): time.sleep(0.05)\n"
         "for i in range(3):\n    print({tag!r}, 'after', i, flush=True)\n    time.sleep(0.05)\n")


def launch_gated(cli, tmp_path: Path, tags: list[str]) -> tuple[Path, dict[str, str]]:
    """Runs on the loopback sshd that print three lines, wait for the gate file, then print three more."""
    gate = tmp_path / "gate"
    cli("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
    ids = {}
    for tag in tags:
        out = cli("launch", "--host", "gpu", "--json", "--name", tag, "--",
                  sys.executable, "-c", GATED.format(tag=tag, gate=str(gate)))
        ids[tag] = str(json.loads(out.stdout)["id"])
    return gate, ids


def running_tails(pane: LogPane) -> list[object]:
    return [w for w in pane.workers if w.group == "log-tail" and w.state in (WorkerState.PENDING,
                                                                               WorkerState.RUNNING)]


class TestPaneFromTheFollower:
    async def test_following_the_pane_takes_the_followers_lines(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """With the monitor lock here, the monitor runs in a thread worker; the pane reads what the history
        has, then shows the lines the follower announces (exactly once each) with no tail of its own."""
        gate, ids = launch_gated(cli, tmp_path, ["solo"])
        run_id = ids["solo"]
        messages: list[Message] = []
        app = EorchApp(Context.load(), refresh_s=0.1)
        async with app.run_test(size=(100, 30), message_hook=messages.append) as pilot:
            await until(pilot, lambda: app.monitor_state == "following", "monitor")
            monitor = next(w for w in app.workers if w.group == "monitor")
            assert monitor._thread_worker  # off the UI loop
            app.open_run(run_id)
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.query(LogPane),
                        "the run's screen")
            pane = app.screen.query_one(LogPane)
            await until(pilot, lambda: len(pane.lines) >= 3 and pane.live, "the lines before the gate")
            await until(pilot, lambda: not running_tails(pane), "the pane's read of the history to end")
            gate.touch()
            await until(pilot, lambda: pane.lines[-1:] == ["solo after 2"], "the lines after the gate")
            assert pane.lines == [f"solo {w} {i}" for w in ("before", "after") for i in range(3)]
            assert not running_tails(pane)  # no tail of its own: every later line came from the follower
            reads = [m.notice for m in messages if isinstance(m, MonitorNoticed)
                     and isinstance(m.notice, LogLinesRead) and m.notice.run_id == run_id]
            assert reads and [line for r in reads for line in r.lines][-3:] == [f"solo after {i}" for i in range(3)]
            with app.ctx.db() as s:
                recorded = s.get(Run, run_id).log_offset
            assert reads[-1].offset == recorded == pane.log_offset

    async def test_read_only_the_pane_reads_without_recording(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """With the lock held elsewhere, the pane runs a reading follower: lines show, the history's offset
        stays where it was (nobody records)."""
        gate, ids = launch_gated(cli, tmp_path, ["ro"])
        ctx = Context.load()
        lock = MonitorLock(ctx.settings.monitor_lock)
        lock.acquire()
        try:
            app = EorchApp(ctx, refresh_s=0.1, open_run=ids["ro"])
            async with app.run_test(size=(100, 30)) as pilot:
                await until(pilot, lambda: app.monitor_state == "read-only", "read-only")
                pane = app.screen.query_one(LogPane)
                gate.touch()
                await until(pilot, lambda: pane.lines[-1:] == ["ro after 2"], "every line")
                assert not pane.live and running_tails(pane)
                with ctx.db() as s:
                    assert s.get(Run, ids["ro"]).log_offset == 0
        finally:
            lock.release()


class TestMergedLog:
    async def test_two_runs_interleaved_with_coloured_prefixes(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """`L` on the runs screen: both active runs' lines as they arrive, each after its run's short id in a
        colour of its own."""
        gate, ids = launch_gated(cli, tmp_path, ["alpha", "beta"])
        app = EorchApp(Context.load(), refresh_s=0.1)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.monitor_state == "following", "monitor")
            await until(pilot, lambda: len(app.runs) == 2, "both runs listed")
            await pilot.press("L")
            screen = app.screen
            assert isinstance(screen, MergedLogScreen)
            gate.touch()
            want = {(ids[tag], f"{tag} after {i}") for tag in ids for i in range(3)}
            await until(pilot, lambda: want <= set(screen.lines), "both runs' lines after the gate")
            assert {run for run, _ in screen.lines} == set(ids.values())
            assert len(set(screen.lines)) == len(screen.lines)  # each line once
            shown = [strip.text for strip in screen.query_one(RichLog).lines]
            assert f"{ids['alpha']}│ alpha after 0" in shown and f"{ids['beta']}│ beta after 2" in shown
            colours = {screen.colours[ids["alpha"]], screen.colours[ids["beta"]]}
            assert len(colours) == 2
            strip = next(s for s in screen.query_one(RichLog).lines if s.text.startswith(ids["beta"]))
            assert str(next(iter(strip)).style.color.name) == screen.colours[ids["beta"]]

    async def test_read_only_the_merged_view_reads_each_run(self, eorch_home: Path, tmp_path: Path, cli) -> None:
        """With the lock held elsewhere the merged view reads each active run's log itself."""
        gate, ids = launch_gated(cli, tmp_path, ["one", "two"])
        ctx = Context.load()
        lock = MonitorLock(ctx.settings.monitor_lock)
        lock.acquire()
        try:
            app = EorchApp(ctx, refresh_s=0.1)
            async with app.run_test(size=(120, 40)) as pilot:
                await until(pilot, lambda: app.monitor_state == "read-only" and len(app.runs) == 2, "read-only")
                await pilot.press("L")
                screen = app.screen
                assert isinstance(screen, MergedLogScreen)
                gate.touch()
                want = {(ids[tag], f"{tag} after {i}") for tag in ids for i in range(3)}
                await until(pilot, lambda: want <= set(screen.lines), "both runs' lines")
        finally:
            lock.release()
