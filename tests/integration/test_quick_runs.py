"""`eorch runs` of ended runs takes its short path (stdlib sqlite3, no typer or SQLAlchemy) and prints exactly
what the full command prints; anything the short path does not know goes to the full command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import db_rows, eorch, launch

from orchestrator.cli.quickruns import _Asked, _parse

TIME_COLUMNS = ("created_at", "started_at", "ended_at", "last_output_at", "checked_at")


def _ended_history(home: Path) -> list[str]:
    """Four real runs on `local` that ended four ways, moved three days back (ages then read the same for
    the seconds between the two commands compared)."""
    ids = [
        launch("echo", "hi", host="local", extra=("--name", "hello [x]"))["id"],
        launch(sys.executable, "-c", "import sys; print('error: something bad', file=sys.stderr); sys.exit(3)",
               host="local")["id"],
        launch(sys.executable, "-c", "raise RuntimeError('boom [y]')", host="local")["id"],
        launch("sleep", "60", host="local")["id"],
    ]
    eorch("cancel", ids[3])
    eorch("watch", *ids, "--until-done", check=False)  # exits 1: two of them failed
    sets = ", ".join(f"{c} = datetime({c}, '-3 days')" for c in TIME_COLUMNS)
    db_rows(home, f"UPDATE runs SET {sets}")
    return ids


def _both(*args: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    quick = eorch("runs", *args, check=False)
    full = eorch("runs", *args, check=False, env={"EORCH_QUICK": "0"})
    return quick, full


def _imports_sqlalchemy(*args: str) -> bool:
    """Whether `eorch runs ARGS` imported SQLAlchemy (python -X importtime lists every module imported)."""
    proc = subprocess.run([sys.executable, "-P", "-X", "importtime", "-m", "orchestrator.cli.main", "runs", *args],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 or args, proc.stderr[-2000:]
    return re.search(r"\| +sqlalchemy\s*$", proc.stderr, re.MULTILINE) is not None


def test_ended_runs_print_the_same_bytes_on_both_paths(eorch_home: Path) -> None:
    ids = _ended_history(eorch_home)
    statuses = {r[0] for r in db_rows(eorch_home, "SELECT status FROM runs")}
    assert statuses == {"succeeded", "failed", "cancelled"}
    for args in ([], ["--wide"], ["-w"], ["--json"], ["--limit", "2"], ["--limit=1", "--json"],
                 ["--status", "failed"], ["--status=cancelled", "--wide"], ["--no-refresh"], ["--status", "lost"],
                 ["--status", "lost", "--json"]):
        quick, full = _both(*args)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), args
    quick, _ = _both()
    assert all(run_id in quick.stdout for run_id in ids)
    assert "hello [x]" in quick.stdout  # brackets are data, not markup
    assert not _imports_sqlalchemy()
    assert not _imports_sqlalchemy("--wide", "--status", "failed")


def test_anything_else_takes_the_full_command(eorch_home: Path) -> None:
    _ended_history(eorch_home)
    for args in (["--host", "local"], ["--status", "nope"], ["--limit", "0"], ["--help"]):
        assert _imports_sqlalchemy(*args), args
    bad = eorch("runs", "--status", "nope", check=False)
    assert bad.returncode != 0 and "unknown status 'nope'" in bad.stderr
    active = launch("sleep", "30", host="local")["id"]
    try:
        assert _imports_sqlalchemy()  # an active run is brought up to date first: only the full path can
        listed = eorch("runs").stdout
        assert active in listed and "running" in listed
    finally:
        eorch("cancel", active)


def test_no_history_yet_says_how_to_start(eorch_home: Path) -> None:
    first = eorch("runs")  # no database yet: the full command creates it
    assert first.stdout == "" and "no runs yet" in first.stderr
    assert (eorch_home / "eorch.db").exists() and not _imports_sqlalchemy()
    quick, full = _both()
    assert (quick.stdout, quick.stderr) == (full.stdout, full.stderr) == (first.stdout, first.stderr)


@pytest.mark.parametrize(("args", "asked"), [
    ([], _Asked()),
    (["-w", "--json"], _Asked(wide=True, json=True)),
    (["--limit", "7", "--status=failed"], _Asked(limit=7, status="failed")),
    (["--limit=1000000", "--refresh"], _Asked(limit=1_000_000)),
    (["--limit"], None), (["--limit", "-1"], None), (["--limit", "²"], None), (["--limit", "1000001"], None), (["--status"], None),
    (["--status", "done"], None), (["--wide=yes"], None), (["--host", "gpu"], None), (["-h"], None),
    (["x"], None),
])
def test_parse_takes_only_the_plain_listing(args: list[str], asked: _Asked | None) -> None:
    assert _parse(args) == asked
