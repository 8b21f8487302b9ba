"""`eorch log analyze -` at a terminal: a person pastes a log, presses Ctrl-D once, and gets the verdict."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_a_pasted_log_ends_at_the_first_ctrl_d(eorch_home: Path) -> None:
    socket = f"eorch-paste-{os.getpid()}"
    command = (f"cd {REPO} && EORCH_HOME={eorch_home} {sys.executable} -m orchestrator.cli.main log analyze -; "
               "echo RC=$?; sleep 30")
    tmux(socket, "new-session", "-d", "-s", "p", "-x", "80", "-y", "24", command)
    try:
        screen = ""
        deadline = time.monotonic() + 20
        while "paste it, then Ctrl-D" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = tmux(socket, "capture-pane", "-p", "-t", "p")
        for line in ("Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
                     "ValueError: pasted [1]"):
            tmux(socket, "send-keys", "-t", "p", "-l", line)
            tmux(socket, "send-keys", "-t", "p", "Enter")
        tmux(socket, "send-keys", "-t", "p", "C-d")
        deadline = time.monotonic() + 20
        while "RC=" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = tmux(socket, "capture-pane", "-p", "-t", "p")
        assert "RC=0" in screen, screen
        assert "(standard input)  3 lines" in screen and "verdict: FAILED" in screen
        assert "root cause  ValueError in main (line 1)" in screen and "pasted [1]" in screen
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
