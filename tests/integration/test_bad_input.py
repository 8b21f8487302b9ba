"""Bad input: one clear line, a non-zero exit, and nothing changed in the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import eorch
from test_spine import add_testbox, db_rows


def counts(home: Path) -> tuple[int, int, int]:
    return (db_rows(home, "select count(*) from runs")[0][0], db_rows(home, "select count(*) from events")[0][0],
            db_rows(home, "select count(*) from hosts")[0][0])


@pytest.mark.parametrize(
    "args, needle",
    [
        (("launch", "--host", "nosuch", "--", "true"), "unknown host 'nosuch'"),
        (("show", "zzzzzzzz"), "unknown run"),
        (("cancel", "zzzzzzzz"), "unknown run"),
        (("launch", "--host", "gpu", "--env", "NOEQUALS", "--", "true"), "bad --env"),
        (("launch", "--host", "gpu", "--env", "1X=2", "--", "true"), "bad --env"),
        (("launch", "--host", "gpu", "--", "no-such-command-xyz"), "command not found on the host"),
        (("launch", "--host", "gpu"), "no command given"),
        (("launch", "--host", "gpu", "--cwd", "/no/such/dir", "--", "true"), "working directory does not exist"),
        (("host", "add", "bad name", "x"), "invalid host name"),
        (("host", "add", "gpu", "testbox"), "already exists"),
        (("host", "check", "nosuch"), "unknown host"),
    ],
)
def test_clear_error_and_history_unchanged(eorch_home: Path, tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    """Each mistake is named in one line on stderr; runs, events and hosts are untouched."""
    add_testbox(tmp_path)
    before = counts(eorch_home)
    proc = eorch(*args, check=False)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert counts(eorch_home) == before


def test_unreachable_host_is_a_clear_error(eorch_home: Path, tmp_path: Path) -> None:
    """A host that refuses connections is reported as unreachable, not a traceback."""
    add_testbox(tmp_path)
    import sqlite3

    with sqlite3.connect(eorch_home / "eorch.db") as conn:
        conn.execute("insert into hosts (name, destination, port, root, python, created_at) "
                     "values ('down', '127.0.0.1', 1, '~/.eorch', 'python3', '2026-01-01')")
    before = counts(eorch_home)
    proc = eorch("launch", "--host", "down", "--", "true", check=False)
    assert proc.returncode != 0 and "host 'down'" in proc.stderr and "Traceback" not in proc.stderr
    assert counts(eorch_home) == before
