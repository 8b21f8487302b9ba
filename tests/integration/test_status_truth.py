"""A status that never lies, with no monitor running: reading commands check the host or say how old it is.

Every test here runs without `eorch watch`, `eorch daemon` or the TUI: the runs are launched and then only
read, through the loopback sshd (host `gpu`) and the built-in `local` host.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from helpers import add_testbox, db_rows, eorch, launch, show, wait_for

LAST_WORDS = "error: something bad"
EXITS_3 = f"import sys; print('working', flush=True); print({LAST_WORDS!r}, file=sys.stderr, flush=True); sys.exit(3)"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ended(run: dict) -> bool:
    return (Path(run["remote_dir"]) / "rc").exists()


class TestReadingCommandsBringStatusUpToDate:
    @pytest.mark.parametrize("host", ["gpu", "local"])
    def test_runs_and_show_record_an_exit_no_monitor_saw(self, eorch_home: Path, tmp_path: Path, host: str) -> None:
        """A job that exited while nothing followed it is `failed · exit 3` in `runs` and `show`, log drained."""
        if host == "gpu":
            add_testbox(tmp_path)
        first = launch(sys.executable, "-c", EXITS_3, host=host)
        second = launch(sys.executable, "-c", EXITS_3, host=host)
        wait_for(lambda: ended(first) and ended(second), 60, "both jobs to exit")
        two_minutes_ago = time.time() - 120
        for run in (first, second):  # launched ten minutes ago, ended two minutes before anyone looked
            os.utime(Path(run["remote_dir"]) / "rc", (two_minutes_ago, two_minutes_ago))
            with sqlite3.connect(eorch_home / "eorch.db") as db:
                db.execute("update runs set created_at = datetime(created_at, '-10 minutes'), "
                           "started_at = datetime(started_at, '-10 minutes') where id = ?", (run["id"],))
        listed = {r["id"]: r for r in json.loads(eorch("runs", "--json").stdout)}
        assert listed[first["id"]]["status"] == "failed" and listed[first["id"]]["exit_code"] == 3
        assert listed[first["id"]]["freshness"]["current"] is True
        table = eorch("runs").stdout
        assert "running" not in table and "failed" in table
        record = show(second["id"])
        assert record["status"] == "failed" and record["exit_code"] == 3
        assert record["log_offset"] == len(f"working\n{LAST_WORDS}\n")  # terminal only after the log was drained
        assert record["phase"] != "starting"
        # The end is when the job ended (its rc file on the host), not when a reading command found it.
        assert _epoch(record["ended_at"].removesuffix("Z")) <= two_minutes_ago + 5
        assert _epoch(listed[first["id"]]["ended_at"].removesuffix("Z")) <= two_minutes_ago + 5
        text = eorch("show", second["id"]).stdout
        assert "failed" in text and "exit 3" in text and "as of" not in text

    def test_a_live_run_stays_running_and_its_check_time_is_kept(self, eorch_home: Path, tmp_path: Path) -> None:
        """A job still alive is confirmed `running` (checked just now), not guessed."""
        add_testbox(tmp_path)
        run = launch("sleep", "600")
        try:
            before = time.time()
            record = show(run["id"])
            assert record["status"] == "running" and record["freshness"] == {"current": True, "note": ""}
            checked = db_rows(eorch_home, "select checked_at from runs where id=?", run["id"])[0][0]
            assert checked is not None
            assert abs(_epoch(checked) - before) < 60
        finally:
            eorch("cancel", run["id"], check=False)


def _epoch(value: str) -> float:
    from datetime import UTC, datetime

    return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()


class TestUnreachableHostIsLabelled:
    def test_show_and_runs_say_as_of_and_no_monitor(self, eorch_home: Path, tmp_path: Path, sshd) -> None:
        """A host that cannot be reached: the status is shown "as of HH:MM, no monitor running", exit 0, quickly."""
        add_testbox(tmp_path)
        run = launch("sleep", "600")
        config = tmp_path / "ssh_config"
        good = config.read_text()
        config.write_text(good.replace(f"Port {sshd.port}", f"Port {closed_port()}"))
        try:
            started = time.monotonic()
            text = eorch("show", run["id"]).stdout
            assert time.monotonic() - started < 60
            first_lines = " ".join(text.splitlines()[:2])
            assert "running" in first_lines and "as of " in first_lines
            assert "no monitor running" in first_lines and "gpu unreachable" in first_lines
            record = show(run["id"])
            assert record["status"] == "running" and record["freshness"]["current"] is False
            listing = eorch("runs").stdout
            assert "(as of" in listing and "no monitor running" in listing
        finally:
            config.write_text(good)
            eorch("cancel", run["id"], check=False)
        # Reachable again: the next reading command checks it and the label is gone.
        assert show(run["id"])["freshness"]["current"] is True


def test_no_refresh_keeps_the_history_as_it_is(eorch_home: Path, tmp_path: Path) -> None:
    """`--no-refresh` reads the history only (the old behaviour, now opt-in)."""
    run = launch(sys.executable, "-c", "raise SystemExit(4)", host="local")
    wait_for(lambda: ended(run), 60, "the job to exit")
    assert json.loads(eorch("show", run["id"], "--json", "--no-refresh").stdout)["status"] == "running"
    assert show(run["id"])["status"] == "failed"
    assert os.path.exists(eorch_home / "eorch.db")
