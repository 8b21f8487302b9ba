"""Fault injection through the real CLI, a real sshd on 127.0.0.1 and the real SQLite history.

Each fault ends with an exact count: the history holds exactly the events one pass over the remote log
gives (faultkit.assert_history_matches_log), and the run's status is true.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from faultkit import (
    DbHolder,
    assert_history_matches_log,
    db_is_writable,
    error_lines_job,
    kinds_of,
    status_events,
    wait_until,
)
from helpers import add_testbox, db_rows, eorch, launch, pids_with_run_id, show
from sshd import free_port


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
        """Another process (a long prune) holds the history's write lock for 3 s, twice, while a log grows;
        then real `eorch prune` runs go on beside the follower."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(200, prefix="busy", flag=flag, every_s=0.002))
        watcher = watch_in_background(run["id"])
        try:
            wait_until(lambda: show(run["id"])["log_offset"] > 10000, what="following to start")
            for _ in range(2):
                DbHolder(eorch_home, 3.0).wait()
            for _ in range(2):
                eorch("prune", "--before", "30d", "--yes")
            flag.write_text("")
            watcher.wait(120)
        finally:
            watcher.kill()
        assert "log_truncated" not in kinds_of(eorch_home, run["id"])
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)
        eorch("show", run["id"])


class TestCancelTruth:
    def test_a_cancel_that_never_reached_the_host_does_not_decide_the_result(
        self, eorch_home: Path, tmp_path: Path, sshd
    ) -> None:
        """The host is unreachable: cancel fails, the job goes on, and its later exit 0 is a success."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(5, prefix="cancel", flag=flag, every_s=0.01))
        config = tmp_path / "ssh_config"
        good = config.read_text()
        config.write_text(good.replace(f"Port {sshd.port}", f"Port {free_port()}"))
        refused = eorch("cancel", run["id"], check=False)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert show(run["id"])["cancel_requested"] is False
        config.write_text(good)
        flag.write_text("")
        eorch("watch", run["id"], "--until-done")
        record = show(run["id"])
        assert (record["status"], record["exit_code"]) == ("succeeded", 0)
        assert "cancel_requested" not in kinds_of(eorch_home, run["id"])
        assert_history_matches_log(eorch_home, run)

    def test_a_cancel_that_reached_the_host_counts_even_if_the_link_then_drops(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """The host keeps the request (a marker in the run directory): a monitor that finds the job ended
        by it records `cancelled`, whoever records first."""
        add_testbox(tmp_path)
        run = launch("sleep", "300")
        eorch("cancel", run["id"])
        record = show(run["id"])
        assert record["status"] == "cancelled" and record["cancel_requested"] is True
        assert Path(run["remote_dir"], "cancel_requested").exists()


class TestRunDirectoryRemoved:
    def test_a_vanished_run_directory_makes_the_run_lost_and_watch_returns(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """A cleanup of the runs directory: the run becomes lost with the reason; watch returns."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", error_lines_job(50, prefix="gone", flag=tmp_path / "never", every_s=0.01))
        try:
            wait_until(lambda: show(run["id"])["log_offset"] > 0 or log_size(run) > 1000, what="some output")
            shutil.rmtree(run["remote_dir"])
            watched = eorch("watch", run["id"], "--until-done", check=False, timeout=90)
            assert watched.returncode != 0
            record = show(run["id"])
            assert record["status"] == "lost"
            reasons = [e.get("reason") for e in status_events(eorch_home, run["id"]) if e.get("to") == "lost"]
            assert reasons and "run directory" in reasons[0] and "gone" in reasons[0]
            assert "is gone from the host" in eorch("show", run["id"]).stdout
            cancelled = eorch("cancel", run["id"])
            assert "lost" in cancelled.stdout and "no process left" not in cancelled.stdout
        finally:
            for pid in pids_with_run_id(run["id"]):
                os.kill(pid, signal.SIGKILL)

    def test_cancel_after_the_directory_vanished_kills_the_job_and_says_so(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """The job still runs without its directory: cancel finds it by its marker, kills it, and the run
        stops being `running`."""
        add_testbox(tmp_path)
        run = launch("sleep", "300")
        wait_until(lambda: pids_with_run_id(run["id"]), what="the job")
        shutil.rmtree(run["remote_dir"])
        out = eorch("cancel", run["id"])
        assert pids_with_run_id(run["id"]) == []
        record = show(run["id"])
        assert record["status"] in ("cancelled", "lost")
        assert "run directory" in out.stdout and "gone" in out.stdout


def remote_runs(root: Path) -> list[str]:
    runs_dir = root / "runs"
    return sorted(os.listdir(runs_dir)) if runs_dir.is_dir() else []


class TestLaunchRecordsFirst:
    def test_a_db_locked_beyond_the_busy_timeout_starts_nothing(self, eorch_home: Path, tmp_path: Path) -> None:
        """The history's write lock held past the busy timeout: one line, no job on the host, no row."""
        root = add_testbox(tmp_path)
        holder = DbHolder(eorch_home, None)
        try:
            out = eorch("launch", "--host", "gpu", "--", "sleep", "300", check=False)
        finally:
            holder.release()
        assert out.returncode == 1, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert "locked" in out.stderr and "nothing was started" in out.stderr
        assert remote_runs(root) == []
        assert db_rows(eorch_home, "select count(*) from runs")[0][0] == 0

    def test_a_read_only_db_starts_nothing(self, eorch_home: Path, tmp_path: Path) -> None:
        """A history that cannot be written: one line, no job on the host."""
        root = add_testbox(tmp_path)
        eorch("runs")  # the history exists and is migrated
        db = eorch_home / "eorch.db"
        subprocess.run(["chattr", "+i", str(db)], check=True)
        try:
            out = eorch("launch", "--host", "gpu", "--", "sleep", "300", check=False)
        finally:
            subprocess.run(["chattr", "-i", str(db)], check=True)
        assert out.returncode == 1, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert "read-only" in out.stderr and "nothing was started" in out.stderr
        assert remote_runs(root) == []

    def test_a_launch_cut_off_after_the_start_leaves_a_pending_row_the_monitor_settles(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """The job started but its start could not be recorded (the lock taken in between): the row stays
        pending, the user is told so in one line, and `watch` records the run from the host's facts."""
        root = add_testbox(tmp_path)
        # Another process takes the history's lock the moment the run directory appears on the host, so
        # the launcher's second write (after the start) times out.
        holder = DbHolder(eorch_home, None, when_exists=root / "runs")
        try:
            out = eorch("launch", "--host", "gpu", "--", sys.executable, "-c", error_lines_job(20, prefix="cut"),
                        check=False)
        finally:
            holder.release()
        assert out.returncode == 1, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert "pending" in out.stderr and "eorch watch" in out.stderr
        (run_id,) = remote_runs(root)
        assert db_rows(eorch_home, "select status from runs where id=?", run_id) == [("pending",)]
        wait_until(lambda: db_is_writable(eorch_home), what="the lock to go")
        eorch("watch", run_id, "--until-done")
        record = show(run_id)
        assert record["status"] == "succeeded"
        assert_history_matches_log(eorch_home, record)


def following_started(home: Path, run: dict) -> bool:
    return show(run["id"])["log_offset"] > 2000


class TestMonitorAndLinkFaults:
    def test_monitor_killed_three_times_records_every_line_once(self, eorch_home: Path, tmp_path: Path) -> None:
        """`watch` SIGKILLed mid-stream and restarted: it resumes at the committed offset."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(300, prefix="kill", flag=flag, every_s=0.005))
        for _ in range(3):
            watcher = watch_in_background(run["id"])
            offset = show(run["id"])["log_offset"]
            wait_until(lambda o=offset: show(run["id"])["log_offset"] > o, what="more lines recorded")
            os.kill(watcher.pid, signal.SIGKILL)
            watcher.wait()
        flag.write_text("")
        eorch("watch", run["id"], "--until-done")
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)

    def test_links_dropped_again_and_again_record_every_line_once(
        self, eorch_home: Path, tmp_path: Path, sshd
    ) -> None:
        """Every SSH connection killed eight times while the log grows: nothing lost, nothing twice."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(300, prefix="link", flag=flag, every_s=0.005))
        watcher = watch_in_background(run["id"])
        try:
            wait_until(lambda: following_started(eorch_home, run), what="following to start")
            for _ in range(8):
                sshd.kill_connections()
                offset = show(run["id"])["log_offset"]
                wait_until(lambda o=offset: show(run["id"])["log_offset"] > o, timeout=60, what="following again")
            flag.write_text("")
            watcher.wait(120)
        finally:
            watcher.kill()
        assert watcher.returncode == 0
        assert show(run["id"])["status"] == "succeeded"
        assert "log_truncated" not in kinds_of(eorch_home, run["id"])
        assert_history_matches_log(eorch_home, run)

    def test_a_db_locked_beyond_the_busy_timeout_while_following_loses_nothing(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """Writes fail for 8 s (the busy timeout is 5 s): the monitor keeps going and resumes from the
        committed offset."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(300, prefix="locked", flag=flag, every_s=0.005))
        watcher = watch_in_background(run["id"])
        try:
            wait_until(lambda: following_started(eorch_home, run), what="following to start")
            DbHolder(eorch_home, 8.0).wait()
            offset = show(run["id"])["log_offset"]
            wait_until(lambda: show(run["id"])["log_offset"] > offset, timeout=60, what="following again")
            flag.write_text("")
            watcher.wait(120)
        finally:
            watcher.kill()
        assert watcher.returncode == 0, watcher.stderr.read() if watcher.stderr else ""
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)


class TestReadOnlyHistoryWhileFollowing:
    def test_watch_on_a_read_only_history_says_so_and_a_later_watch_records_everything_once(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """`watch` cannot record into a read-only history: one line, non-zero exit; writable again, the
        next watch records every line once."""
        add_testbox(tmp_path)
        flag = tmp_path / "stop"
        run = launch(sys.executable, "-c", error_lines_job(100, prefix="ro", flag=flag, every_s=0.005))
        files = [p for p in eorch_home.glob("eorch.db*")]
        subprocess.run(["chattr", "+i", *map(str, files)], check=True)
        try:
            out = eorch("watch", run["id"], "--until-done", check=False, timeout=60)
        finally:
            subprocess.run(["chattr", "-i", *map(str, files)], check=True)
        assert out.returncode != 0
        assert "Traceback" not in out.stderr and "read-only" in out.stderr
        flag.write_text("")
        eorch("watch", run["id"], "--until-done")
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)


class TestLongDrain:
    def test_a_backlog_longer_than_the_drain_timeout_is_read_to_the_end(
        self, eorch_home: Path, tmp_path: Path, monkeypatch
    ) -> None:
        """Draining an ended run's backlog takes longer than MAX_DRAIN_ATTEMPTS drain timeouts: while it makes
        progress it goes on (before: cut off as `log_not_drained`, the verdict taken on part of the log)."""
        import asyncio

        from orchestrator.context import Context
        from orchestrator.monitoring import followers, monitor

        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", error_lines_job(60000, prefix="backlog"))
        wait_until(lambda: Path(run["remote_dir"], "rc").exists(), what="the run to end")
        monkeypatch.setattr(followers, "DRAIN_TIMEOUT_S", 0.1)  # 3 attempts: 0.3 s, far less than the drain
        ctx = Context.load()
        asyncio.run(monitor.Monitor(ctx, run_refs=[run["id"]], poll_interval=0.2).run(until_done=True))
        assert "log_not_drained" not in kinds_of(eorch_home, run["id"])
        assert show(run["id"])["status"] == "succeeded"
        assert_history_matches_log(eorch_home, run)
