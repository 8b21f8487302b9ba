"""Bad input: one clear line, a non-zero exit, and nothing changed in the history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    "args, needle",
    [
        (("runs", "--limit", HUGE), "--limit must be between 1 and"),
        (("runs", "--limit", "0"), "--limit must be between 1 and"),
        (("search", "x", "--limit", HUGE), "--limit must be between 1 and"),
        (("similar", "x", "--limit", HUGE), "--limit must be between 1 and"),
        (("alerts", "--limit", HUGE), "--limit must be between 1 and"),
        (("runs", "--since", HUGE + "d"), "further back than any date"),
        (("prune", "--before", HUGE + "w", "--yes"), "further back than any date"),
        (("host", "add", "h2", "testbox", "--port", HUGE), "not a TCP port"),
        (("host", "add", "h2", "testbox", "--port", "0"), "not a TCP port"),
        (("export", "--out", "/no/such/dir/runs.json"), "no directory /no/such/dir"),
        (("daemon", "--poll-interval", "-1"), "--poll-interval must be between"),
        (("daemon", "--poll-interval", "nan"), "--poll-interval must be between"),
        (("launch", "--host", "gpu", "--nmae", "x", "--", "true"), "no such option '--nmae'"),
        (("launch", "--host", "gpu", "--envv", "A=1", "true"), "no such option '--envv'"),
    ],
)
def test_out_of_range_and_mistyped_input_is_one_line(eorch_home: Path, tmp_path: Path, args: tuple[str, ...],
                                                    needle: str) -> None:
    """Numbers too big for SQLite or a timedelta, a missing --out directory, a busy-looping poll interval and
    a mistyped launch option are each one line and a non-zero exit; nothing is recorded, nothing starts."""
    add_testbox(tmp_path)
    before = counts(eorch_home)
    proc = eorch(*args, check=False, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert counts(eorch_home) == before


def test_run_reference_wildcards_are_characters(eorch_home: Path, tmp_path: Path) -> None:
    """`%` and `_` in a run reference match only themselves, never another run's id."""
    add_testbox(tmp_path)
    run = json.loads(eorch("launch", "--host", "gpu", "--json", "--", "true").stdout)
    for ref in ("%", "_" * len(run["id"]), run["id"][:2] + "%"):
        proc = eorch("show", ref, check=False)
        assert proc.returncode == 2 and f"unknown run {ref!r}" in proc.stderr, ref
    assert json.loads(eorch("show", run["id"][:4], "--json").stdout)["id"] == run["id"]


def test_stdout_on_a_full_disk_is_one_line(eorch_home: Path, tmp_path: Path) -> None:
    """`eorch runs > /dev/full` says the output could not be written, in one line, exit 1."""
    add_testbox(tmp_path)
    eorch("launch", "--host", "gpu", "--", "true")
    for args in (("runs",), ("runs", "--json"), ("host", "list")):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=60, check=False)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.strip() == "error: cannot write the output: No space left on device", proc.stderr


@pytest.mark.parametrize(
    "env_line, needle",
    [
        ('env = { "A=B" = "1" }', "'A=B' is not a variable name"),
        ('env = { "" = "1" }', "'' is not a variable name"),
        ('env = { "A\\u0000B" = "1" }', "is not a variable name"),
        ('env = { A = "x\\u0000y" }', "the value of A has a NUL byte"),
    ],
)
def test_spec_env_that_no_process_can_hold_is_refused(eorch_home: Path, tmp_path: Path, env_line: str,
                                                     needle: str) -> None:
    """Env keys with `=`, empty keys and NUL bytes are refused when the spec is read, before anything starts."""
    add_testbox(tmp_path)
    spec = tmp_path / "job.toml"
    spec.write_text(f'kind = "command"\n[command]\nargv = ["true"]\n{env_line}\n')
    before = counts(eorch_home)
    proc = eorch("launch", "--host", "gpu", "--spec", str(spec), check=False)
    assert proc.returncode == 2 and needle in proc.stderr and "command.env" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert counts(eorch_home) == before


class TestInvalidUtf8:
    def test_spec(self, eorch_home: Path, tmp_path: Path) -> None:
        """A spec that is not UTF-8 is named, with the byte offset."""
        add_testbox(tmp_path)
        spec = tmp_path / "job.toml"
        spec.write_bytes(b'kind = "command"\nname = "\xff\xfe"\n')
        proc = eorch("launch", "--host", "gpu", "--spec", str(spec), check=False)
        assert proc.returncode == 2 and "job.toml: not UTF-8 text (byte 25)" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    def test_config_toml(self, eorch_home: Path) -> None:
        """A config.toml that is not UTF-8 stops every command with one line naming the file."""
        (eorch_home / "config.toml").write_bytes(b"# caf\xe9\n[monitor]\n")
        proc = eorch("runs", check=False)
        assert proc.returncode == 1 and "config.toml: not UTF-8 text (byte 5)" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    def test_patch_manifest(self, eorch_home: Path, tmp_path: Path) -> None:
        """A patch manifest that is not UTF-8 is named before any host is reached."""
        patch_dir = tmp_path / "bad-set"
        patch_dir.mkdir()
        (patch_dir / "manifest.toml").write_bytes(b'name = "caf\xe9"\n')
        proc = eorch("patch", "check", str(patch_dir), check=False)
        assert proc.returncode == 1 and "manifest.toml: not UTF-8 text" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The history file made unwritable, also for root (immutable attribute; chmod for anyone else)."""
    as_root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(path)], check=True) if as_root else path.chmod(0o444)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True) if as_root else path.chmod(0o644)


def test_read_only_history_stops_watch_and_daemon_with_one_line(eorch_home: Path, tmp_path: Path) -> None:
    """With a run to follow and an unwritable eorch.db, `watch` and `daemon` end at once with one line
    (they used to retry for ever); `runs` still reads; `cancel` says why it cannot record."""
    add_testbox(tmp_path)
    run = json.loads(eorch("launch", "--host", "gpu", "--json", "--", "sleep", "120").stdout)
    try:
        with read_only(eorch_home / "eorch.db"):
            assert run["id"] in eorch("runs").stdout
            for args in (("watch",), ("watch", run["id"], "--until-done"), ("daemon",)):
                proc = eorch(*args, check=False, timeout=90)
                assert proc.returncode == 1, (args, proc.stderr)
                lines = proc.stderr.strip().splitlines()
                assert "Traceback" not in proc.stderr and len(lines) == 1, (args, proc.stderr)
                assert "eorch.db is read-only" in lines[0] and "make it and its directory writable" in lines[0]
    finally:
        eorch("cancel", run["id"], "--grace", "1", check=False)
