"""`eorch tui` as a person runs it: in tmux (a private socket), keys in, the screen captured."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from seed import seed

from orchestrator.context import Context

REPO = Path(__file__).resolve().parents[2]


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout


def wait_screen(socket: str, needle: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux(socket, "capture-pane", "-p", "-t", "tui")
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen was:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_eorch_tui_in_tmux(tui_home: Path, tmp_path: Path) -> None:
    """The runs table shows the seeded runs; Enter opens the newest run's detail; Escape, then q quits."""
    ctx = Context.load()
    seed(ctx, tmp_path / "local-root")
    socket = f"eorch-test-{os.getpid()}"
    command = (f"cd {REPO} && EORCH_HOME={tui_home} TERM=xterm-256color "
               f"{sys.executable} -m orchestrator.cli.main tui --read-only --refresh 0.5")
    tmux(socket, "new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", command)
    try:
        runs = wait_screen(socket, "Launch")
        assert "eagle3-llama-8" in runs and "cuda-oom" in runs and "12/35" in runs
        assert "Filter" in runs and "Launch" in runs
        tmux(socket, "send-keys", "-t", "tui", "Down", "Enter")
        detail = wait_screen(socket, "exit 1")
        assert "bb22cc33" in detail and "Root cause" in detail and "launch 1m00s" in detail
        wait_screen(socket, "torch.OutOfMemoryError")  # a failed run opens on its root cause
        tmux(socket, "send-keys", "-t", "tui", "l")
        wait_screen(socket, "RuntimeError: Engine core initialization failed")
        tmux(socket, "send-keys", "-t", "tui", "Escape")
        wait_screen(socket, "5 of 5 runs")
        tmux(socket, "send-keys", "-t", "tui", "q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if subprocess.run(["tmux", "-L", socket, "has-session", "-t", "tui"], capture_output=True, check=False).returncode:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("q did not quit")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_o_reads_the_whole_log_in_the_pager_and_comes_back(tui_home: Path, tmp_path: Path) -> None:
    """`o` suspends the app, pipes `eorch logs RUN` into $PAGER, and the dashboard returns when it exits."""
    ctx = Context.load()
    seed(ctx, tmp_path / "local-root")
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {paged}\n")
    pager.chmod(0o755)
    socket = f"eorch-test-pager-{os.getpid()}"
    command = (f"cd {REPO} && EORCH_HOME={tui_home} PAGER={pager} TERM=xterm-256color "
               f"{sys.executable} -m orchestrator.cli.main tui bb22cc33 --read-only --refresh 0.5")
    tmux(socket, "new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", command)
    try:
        wait_screen(socket, "torch.OutOfMemoryError")
        tmux(socket, "send-keys", "-t", "tui", "o")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "Engine core initialization failed" not in (
                paged.read_text() if paged.exists() else ""):
            time.sleep(0.2)
        text = paged.read_text()
        assert "(EngineCore_DP0 pid=4242)" in text  # the log as written, not the pane's shortened view
        assert "RuntimeError: Engine core initialization failed. See root cause above." in text
        wait_screen(socket, "torch.OutOfMemoryError")  # back on the dashboard
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
