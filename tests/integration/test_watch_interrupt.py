"""Ctrl-C on `eorch watch` (a real SIGINT to a real `eorch watch`): one line saying the jobs keep running,
exit 130, and no asyncio "Event loop is closed" traceback, however busy its followers are."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import eorch, launch, show
from sshd import _children

CHATTY = "import time\nfor i in range(10**6):\n    print('line', i, flush=True)\n    time.sleep(0.002)\n"


def tails_of(pid: int) -> int:
    count = 0
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"tail\0"):
                count += 1
        except OSError:
            pass
    return count


class TestCtrlC:
    def test_sigint_while_following_busy_logs_prints_no_traceback(self, eorch_home: Path) -> None:
        """Several runs writing fast; SIGINT as soon as `watch` follows all of them, a few times over."""
        runs = [launch(sys.executable, "-c", CHATTY, host="local") for _ in range(3)]
        try:
            for attempt in range(4):
                watcher = subprocess.Popen([sys.executable, "-P", "-m", "orchestrator.cli.main", "watch"],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                try:
                    deadline = time.monotonic() + 60
                    while tails_of(watcher.pid) < len(runs):
                        assert watcher.poll() is None, watcher.communicate()
                        assert time.monotonic() < deadline, "watch never followed every run"
                        time.sleep(0.005)
                    time.sleep(0.05 * attempt)  # a few moments into following; the outcome must not depend on it
                    watcher.send_signal(signal.SIGINT)
                    out, err = watcher.communicate(timeout=60)
                finally:
                    if watcher.poll() is None:
                        watcher.kill()
                assert "is closed" not in err and "Traceback" not in err, err
                assert watcher.returncode == 130
                assert "stopped watching; the jobs keep running" in out
            assert {show(r["id"])["status"] for r in runs} == {"running"}
        finally:
            for run in runs:
                eorch("cancel", run["id"], check=False)
