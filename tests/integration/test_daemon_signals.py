"""`eorch daemon` handles SIGTERM from the start: a TERM that comes while it imports and opens the history
ends it cleanly (exit 0, no traceback) before it takes the monitor lock; one that comes later stops the
monitor as always."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import eorch

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def catches_term(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (the SigCgt mask in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & SIGTERM_BIT)
    return False


def holds_lock(home: Path, pid: int) -> bool:
    lock = home / "monitor.lock"
    return lock.exists() and lock.read_text() == f"pid {pid}"


def start_daemon() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-P", "-m", "orchestrator.cli.main", "daemon"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


class TestTermDuringStartUp:
    def test_a_term_as_soon_as_it_is_caught_ends_the_daemon_cleanly_before_it_begins(
        self, eorch_home: Path
    ) -> None:
        """TERM at the first moment the daemon catches it (long before it could follow anything): exit 0, no
        traceback, the monitor lock never taken."""
        eorch("runs")  # the history exists, as on any machine that ran eorch before
        daemon = start_daemon()
        try:
            deadline = time.monotonic() + 60
            while not (catches_term(daemon.pid) or holds_lock(eorch_home, daemon.pid)):
                assert daemon.poll() is None, daemon.communicate()
                assert time.monotonic() < deadline, "the daemon never handled SIGTERM"
                time.sleep(0.002)
            assert not holds_lock(eorch_home, daemon.pid), "the daemon took the lock before it handled SIGTERM"
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=60)
        finally:
            if daemon.poll() is None:
                daemon.kill()
        assert daemon.returncode == 0, err
        assert "Traceback" not in err
        assert not holds_lock(eorch_home, daemon.pid)

    def test_a_term_once_it_follows_stops_it_cleanly(self, eorch_home: Path) -> None:
        """TERM right after the daemon took the monitor lock (what the alert-outbox test does): exit 0."""
        daemon = start_daemon()
        try:
            deadline = time.monotonic() + 60
            while not holds_lock(eorch_home, daemon.pid):
                assert daemon.poll() is None, daemon.communicate()
                assert time.monotonic() < deadline, "the daemon never took the lock"
                time.sleep(0.002)
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=60)
        finally:
            if daemon.poll() is None:
                daemon.kill()
        assert daemon.returncode == 0, err
        assert "Traceback" not in err

