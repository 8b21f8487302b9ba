"""Helpers shared by the integration and end-to-end tests (the real CLI, the history file, /proc)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from worker import procs


def eorch(*args: str, check: bool = True, timeout: float = 300, input: str | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `eorch` CLI as a user would (from ``cwd``, default the test's own).

    ``timeout`` guards against a hang, nothing more: a loaded box (a CPU hog beside the suite) must not fail it.
    ``-P``: like the `eorch` console script, keep the cwd off the controller's sys.path (``-m`` adds it).
    """
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "orchestrator.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, input=input, check=False, cwd=cwd,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"eorch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def add_testbox(tmp_path: Path, name: str = "gpu") -> Path:
    root = tmp_path / "remote-root"
    eorch("host", "add", name, "testbox", "--root", str(root))
    return root


def launch(*argv: str, host: str = "gpu", extra: tuple[str, ...] = ()) -> dict:
    out = eorch("launch", "--host", host, "--json", *extra, "--", *argv)
    return json.loads(out.stdout)


def show(run_id: str) -> dict:
    return json.loads(eorch("show", run_id, "--json").stdout)


def db_rows(home: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(home / "eorch.db") as conn:
        return conn.execute(sql, args).fetchall()


def wait_for(predicate, timeout: float = 60, what: str = "condition"):
    """Polls ``predicate`` until it gives something true.  ``timeout`` guards against a hang, nothing more: the
    suite runs more processes than cores, and a loaded box must not fail a test that would pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def pids_with_run_id(run_id: str) -> list[int]:
    """Live processes carrying the run's marker (what `eorch cancel` must leave empty)."""
    return procs.pids_with_marker("EORCH_RUN_ID", run_id)


def read_events(path: Path) -> list[dict]:
    """All complete step events in ``path`` (a recipe's events.jsonl; a trailing partial line is ignored)."""
    events: list[dict] = []
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def ctrl_c(proc: subprocess.Popen, timeout: float = 60) -> None:
    """Stop a command as Ctrl-C does (SIGINT) and wait for it; one that outlives ``timeout`` is killed, so a
    failing test leaves no process behind, and the failure is raised."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise


def _histories(tmp_path: Path) -> list[Path]:
    """Every ``eorch.db`` under ``tmp_path``, not looking inside virtual environments (a test that builds the
    engines leaves ~100k files there, and walking them took the rest of its timeout)."""
    found = []
    for root, dirs, files in os.walk(tmp_path):
        if "pyvenv.cfg" in files:
            dirs[:] = []
            continue
        if "eorch.db" in files:
            found.append(Path(root) / "eorch.db")
    return found


def kill_leftovers(tmp_path: Path) -> list[int]:
    """SIGKILL what a finished test left running: the jobs of the runs in any history under ``tmp_path``
    (they carry ``EORCH_RUN_ID``) and the eorch commands (a monitor, `watch`) started with such a history."""
    homes, run_ids = set(), set()
    for db in _histories(tmp_path):
        homes.add(f"EORCH_HOME={db.parent}".encode())
        try:
            with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
                run_ids |= {f"EORCH_RUN_ID={r}".encode() for (r,) in conn.execute("SELECT id FROM runs")}
        except sqlite3.Error:
            pass
    if not homes:
        return []
    left = []
    for pid in procs.all_pids():
        seen = procs.environ_and_argv(pid) if pid != os.getpid() else None
        if seen is None:
            continue
        env, argv = set(seen[0]), seen[1]
        eorch_command = any(a == b"orchestrator.cli.main" or a.endswith(b"/eorch") for a in argv)
        if env & run_ids or (eorch_command and env & homes):
            left.append(pid)
    procs.signal_pids(left, signal.SIGKILL)
    return left
