"""Fault injection through the real CLI, a real sshd on 127.0.0.1 and the real SQLite history.

Each fault ends with an exact count: the history holds exactly the events one pass over the remote log
gives (faultkit.assert_history_matches_log), and the run's status is true.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from faultkit import DbHolder, assert_history_matches_log, error_lines_job, kinds_of, wait_until
from helpers import add_testbox, eorch, launch, show


def watch_in_background(*run_ids: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", *run_ids, "--until-done"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def log_size(run: dict) -> int:
    return Path(run["remote_dir"], "log").stat().st_size


class TestNoFalseTruncation:
    def test_a_long_drain_beside_a_growing_log_duplicates_nothing(self, eorch_home: Path, tmp_path: Path) -> None:
        """Two runs on one host: while the ended one drains a big log, the other's liveness snapshot grows
        stale; its follower has read past it, which is not a truncation."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        ended = launch(sys.executable, "-c", error_lines_job(20000, prefix="ended"))
        wait_until(lambda: Path(ended["remote_dir"], "rc").exists(), what="the first run to end")
        growing = launch(sys.executable, "-c", error_lines_job(200, prefix="growing", flag=flag, every_s=0.005))
        wait_until(lambda: log_size(growing) > 20000, what="a backlog in the second run")
        watcher = watch_in_background(ended["id"], growing["id"])
        try:
            wait_until(lambda: show(ended["id"])["status"] != "running", timeout=120, what="the drain")
            flag.write_text("")
            watcher.wait(120)
        finally:
            watcher.kill()
        assert "log_truncated" not in kinds_of(eorch_home, growing["id"])
        for run in (ended, growing):
            assert show(run["id"])["status"] == "succeeded"
            assert_history_matches_log(eorch_home, run)

    def test_a_writer_holding_the_db_3s_duplicates_nothing(self, eorch_home: Path, tmp_path: Path) -> None:
        """Another process (a long prune) holds the history's write lock for 3 s, twice, while a log grows."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(200, prefix="busy", flag=flag, every_s=0.002))
        watcher = watch_in_background(run["id"])
        try:
            wait_until(lambda: show(run["id"])["log_offset"] > 10000, what="following to start")
            for _ in range(2):
                DbHolder(eorch_home, 3.0).wait()
            flag.write_text("")
            watcher.wait(120)
        finally:
            watcher.kill()
        assert "log_truncated" not in kinds_of(eorch_home, run["id"])
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)
        eorch("show", run["id"])
