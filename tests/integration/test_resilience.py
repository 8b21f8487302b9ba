"""Following survives what the seeds' user suffered: a dropped link, a killed controller."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import eorch
from test_spine import add_testbox, db_rows, launch, show, wait_for

N_LINES = 120
# Numbered progress lines the parser reports as ProgressReported events, at ~30 lines/s.
JOB = f"""
import time
for i in range(1, {N_LINES} + 1):
    print(f"Processed {{i}}/{N_LINES} samples", flush=True)
    time.sleep(0.03)
"""


def watch_process(run_id: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run_id, "--until-done"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def recorded_progress(home: Path, run_id: str) -> list[int]:
    """The `done` of every progress event recorded, in order (the parser reports each new percent)."""
    return [done for done, _ in recorded_progress_lines(home, run_id)]


def recorded_progress_lines(home: Path, run_id: str) -> list[tuple[int, int]]:
    rows = db_rows(home, "select data, line_no from events where run_id=? and kind='progress_reported' order by id",
                   run_id)
    return [(json.loads(d)["done"], line_no) for (d, line_no) in rows]


def assert_every_line_counted_once(home: Path, run_id: str) -> None:
    """Line i says "Processed i/N": a lost line would shift later line numbers down, a duplicate up."""
    seen = recorded_progress_lines(home, run_id)
    assert seen, "no progress recorded"
    assert all(done == line_no for done, line_no in seen), seen
    dones = [d for d, _ in seen]
    assert dones == sorted(set(dones)) and dones[-1] == N_LINES


class TestControllerRestart:
    def test_sigkill_of_the_controller_loses_and_duplicates_no_line(self, eorch_home: Path, tmp_path: Path) -> None:
        """Killed with SIGKILL mid-run and restarted, the watcher resumes at the committed offset."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", JOB)
        for _ in range(3):
            watcher = watch_process(run["id"])
            wait_for(lambda: len(recorded_progress(eorch_home, run["id"])) > 5, what="some lines recorded")
            time.sleep(0.4)
            os.kill(watcher.pid, signal.SIGKILL)
            watcher.wait()
        eorch("watch", run["id"], "--until-done", timeout=120)
        record = show(run["id"])
        remote_size = Path(run["remote_dir"], "log").stat().st_size
        assert record["status"] == "succeeded"
        assert record["log_offset"] == remote_size
        assert_every_line_counted_once(eorch_home, run["id"])


class TestLinkDrop:
    def test_job_survives_a_dropped_link_and_following_resumes(self, eorch_home: Path, tmp_path: Path, sshd) -> None:
        """Links dropped again and again (also as the job ends) never lose a line; the run keeps running."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", JOB)
        watcher = watch_process(run["id"])
        try:
            wait_for(lambda: len(recorded_progress(eorch_home, run["id"])) > 5, what="some lines recorded")
            for _ in range(8):
                sshd.kill_connections()
                time.sleep(0.7)
            watcher.wait(120)
        finally:
            watcher.kill()
        assert watcher.returncode == 0
        assert show(run["id"])["status"] == "succeeded"
        assert_every_line_counted_once(eorch_home, run["id"])
        hosts = db_rows(eorch_home, "select reachable from hosts where name='gpu'")
        assert hosts == [(1,)]
