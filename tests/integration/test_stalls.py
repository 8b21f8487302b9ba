"""Stalls told honestly: the stall clock is the log's last output time on the host, not the monitor's start.

A load stuck at 54/64 is simulated with a real job on the loopback sshd whose log is then aged on the host
(its mtime set 25 minutes back, as if the job had printed its last shard line then).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from helpers import add_testbox, ctrl_c, db_rows, eorch, launch, wait_for

STUCK = ("(Worker_TP0 pid=7) Loading safetensors checkpoint shards:  84% Completed | 54/64 "
         "[12:00<04:19, 13.30s/it]\n")
JOB = f"import sys, time\nsys.stdout.write({STUCK!r}); sys.stdout.flush()\ntime.sleep(600)\n"
QUIET_MIN = 25


def stuck_run(tmp_path: Path) -> dict:
    import sys

    add_testbox(tmp_path)
    run = launch(sys.executable, "-c", JOB)
    log = Path(run["remote_dir"]) / "log"
    wait_for(lambda: log.exists() and log.read_text() == STUCK, 60, "the shard line in the log")
    then = time.time() - QUIET_MIN * 60
    os.utime(log, (then, then))
    return run


async def _monitor_until(ctx, predicate, timeout: float = 90) -> object:
    """Run a real monitor with the alert engine until ``predicate(engine)`` holds; return the engine."""
    from orchestrator.alerts.engine import monitor_listeners
    from orchestrator.monitoring.monitor import Monitor

    engine = monitor_listeners(ctx)[0]
    task = asyncio.create_task(Monitor(ctx, listeners=[engine], poll_interval=0.2).run(forever=True))
    try:
        deadline = time.monotonic() + timeout
        while not predicate(engine):
            assert not task.done(), task
            assert time.monotonic() < deadline, "timed out waiting for the monitor"
            await asyncio.sleep(0.1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return engine


def stalled_alerts(home: Path, run_id: str) -> list[tuple]:
    return db_rows(home, "select kind from alerts where run_id=? and kind='stalled'", run_id)


class TestStallClock:
    def test_show_says_last_output_and_overdue(self, eorch_home: Path, tmp_path: Path) -> None:
        """`show` after 25 quiet minutes: `54/64 · overdue … · last output 25m ago`, never the stale `ETA 4m19s`."""
        run = stuck_run(tmp_path)
        try:
            text = eorch("show", run["id"]).stdout
            shards = next(line for line in text.splitlines() if line.startswith("shards:"))
            assert "54/64" in shards and "overdue" in shards and "last output 25m ago" in shards
            assert "ETA" not in shards
            record = json.loads(eorch("show", run["id"], "--json").stdout)
            assert record["last_output_at"] is not None
            listing = eorch("runs").stdout
            assert "overdue" in listing
        finally:
            eorch("cancel", run["id"], check=False)

    def test_stalled_fires_once_across_monitor_restarts(self, eorch_home: Path, tmp_path: Path) -> None:
        """A monitor started 25 minutes into the silence raises `stalled` at once; a restarted one does not again."""
        from orchestrator.context import Context
        from orchestrator.store.models import Run

        run = stuck_run(tmp_path)
        try:
            ctx = Context.load()
            asyncio.run(_monitor_until(ctx, lambda _e: stalled_alerts(eorch_home, run["id"])))
            assert len(stalled_alerts(eorch_home, run["id"])) == 1

            seen: dict[str, float] = {}

            def checked_then_ticked(engine) -> bool:
                """This monitor confirmed the run's last output on the host, then ran a stall check after that."""
                if "tick" in seen:
                    return engine._last_tick != seen["tick"]
                with ctx.db() as s:
                    checked = s.get(Run, run["id"]).checked_at
                if engine._started_at is not None and checked is not None and checked >= engine._started_at:
                    seen["tick"] = engine._last_tick
                return False

            asyncio.run(_monitor_until(Context.load(), checked_then_ticked))
            assert len(stalled_alerts(eorch_home, run["id"])) == 1
            body = db_rows(eorch_home, "select body from alerts where run_id=? and kind='stalled'", run["id"])[0][0]
            assert f"no new log output and no progress for {QUIET_MIN} minutes" in body
        finally:
            eorch("cancel", run["id"], check=False)


def test_watch_says_overdue_and_last_output(eorch_home: Path, tmp_path: Path) -> None:
    """`eorch watch` on the stuck load prints `54/64 · overdue … · last output 25m ago`, not a frozen ETA."""
    import subprocess
    import sys
    import threading

    run = stuck_run(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"]],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    watchdog = threading.Timer(120, proc.kill)  # a watch that never says it ends the loop below, and fails
    watchdog.start()
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "last output" in line:
                break
        told = seen[-1]
        assert "54/64" in told and "overdue" in told and "last output 25m ago" in told, seen
        assert not any("ETA 4m19s" in line for line in seen)
    finally:
        watchdog.cancel()
        ctrl_c(proc)
        eorch("cancel", run["id"], check=False)
