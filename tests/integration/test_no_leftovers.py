"""The suite's own hygiene: what a test leaves running (its runs' jobs, an `eorch watch`) is killed after it
(tests/conftest.py), so a failing test cannot load the box for the tests after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import kill_leftovers, launch, pids_with_run_id, wait_for


def test_a_tests_jobs_and_watchers_are_killed_after_it(eorch_home: Path, tmp_path: Path) -> None:
    run = launch("sleep", "300", host="local")
    wait_for(lambda: pids_with_run_id(run["id"]), 60, "the job to start")
    watcher = subprocess.Popen([sys.executable, "-P", "-m", "orchestrator.cli.main", "watch", run["id"]],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        killed = kill_leftovers(tmp_path)
        # Which pids were killed first: a scan that read the watcher mid-execve (procs.environ_and_argv) missed it.
        assert watcher.pid in killed, (watcher.pid, killed, watcher.poll())
        assert watcher.wait(30) == -9
        wait_for(lambda: not pids_with_run_id(run["id"]), 30, "the job to be gone")
    finally:
        watcher.kill()
