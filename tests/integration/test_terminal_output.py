"""`eorch runs` and `eorch show` as a stranger sees them: an 80-column terminal, and output piped to a file."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import eorch

from orchestrator.context import Context
from orchestrator.store.models import Run
from orchestrator.store.queries import utcnow

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG_NAME = "extract-kimi-k2.5-hidden-states-layers-2-30-58-tp8-run-number-7"
TRACEBACK = ('Traceback (most recent call last):\n  File "/opt/envs/vllm-0.16.0/lib/python3.12/site-packages/vllm/'
             'v1/worker/gpu_model_runner.py", line 2417, in execute_model\n    assert len(request.block_hashes) '
             '>= num_full_blocks\nAssertionError')


def in_terminal(*args: str, columns: int = 80) -> str:
    """Run the real CLI with its stdout on a pseudo-terminal `columns` wide; what the user's screen shows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", *args], stdout=slave,
                            stderr=subprocess.PIPE, env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(60)
    os.close(master)
    assert proc.returncode == 0, proc.stderr.read().decode()
    return ANSI.sub("", out.decode()).replace("\r\n", "\n")


@pytest.fixture
def history(eorch_home: Path) -> dict[str, str]:
    ctx = Context.load()
    now = utcnow()
    with ctx.db() as s:
        s.add(Run(id="e0220ab1", name=LONG_NAME, host="local", kind="command",
                  command=["python", "extract.py", "--note", "it's [bold]fine[/]"], env={}, status="running",
                  phase="loading", shards_done=54, shards_total=64, shards_eta_s=259.0,
                  created_at=now - timedelta(minutes=20), started_at=now - timedelta(minutes=19),
                  log_offset=0, events_offset=0, cancel_requested=False))
        s.add(Run(id="f1330bc2", name="tiny", host="local", kind="command", command=["true"], env={},
                  status="failed", phase="failed", exit_code=1, created_at=now - timedelta(hours=3),
                  started_at=now - timedelta(hours=3), ended_at=now - timedelta(hours=3) + timedelta(seconds=55),
                  log_offset=0, events_offset=0, cancel_requested=False,
                  root_cause={"exception": "AssertionError", "message": "", "process": "Worker_TP3 pid=77",
                              "traceback": TRACEBACK, "signature": None}))
    return {"loading": "e0220ab1", "failed": "f1330bc2"}


class TestRunsAt80Columns:
    def test_ids_numbers_and_times_are_never_cut(self, history: dict[str, str]) -> None:
        """Full short ids, progress with ETA, relative age and duration fit 80 columns; only names give way."""
        screen = in_terminal("runs")
        lines = screen.rstrip("\n").split("\n")
        assert max(len(line) for line in lines) <= 80
        assert lines[0].split() == ["ID", "NAME", "STATUS", "PROGRESS", "AGE", "TIME", "CAUSE"]
        loading = next(line for line in lines if line.startswith("e0220ab1 "))
        assert "running" in loading and "54/64 ETA 4m19s" in loading
        assert "20m ago" in loading and "running 19m" in loading and "…" in loading
        failed = next(line for line in lines if line.startswith("f1330bc2 "))
        assert "3h ago" in failed and "ran 55s" in failed and "AssertionE" in failed

    def test_wide_adds_columns_and_cuts_no_id(self, history: dict[str, str]) -> None:
        screen = in_terminal("runs", "--wide")
        assert "HOST" in screen and "EXIT" in screen and "e0220ab1" in screen and "f1330bc2" in screen


class TestPiped:
    def test_runs_piped_is_aligned_text_with_nothing_cut(self, history: dict[str, str]) -> None:
        out = eorch("runs").stdout
        assert "\x1b" not in out
        assert LONG_NAME in out and "HOST" not in out  # compact: no host column
        assert out.split("\n")[0].split() == ["ID", "NAME", "STATUS", "PROGRESS", "AGE", "TIME", "CAUSE"]

    def test_show_piped_keeps_traceback_lines_whole(self, history: dict[str, str]) -> None:
        """A traceback saved with `eorch show RUN > tb.txt` is the traceback, byte for byte, line for line."""
        out = eorch("show", history["failed"], env={"COLUMNS": "80"}).stdout
        assert TRACEBACK in out

    def test_show_prints_the_command_shell_quoted(self, history: dict[str, str]) -> None:
        out = eorch("show", history["loading"]).stdout
        assert "command: python extract.py --note 'it'\"'\"'s [bold]fine[/]'" in out


class TestFirstContact:
    def test_empty_history_says_how_to_start(self, eorch_home: Path) -> None:
        proc = eorch("runs")
        assert proc.stdout == "" and "eorch launch --host local" in proc.stderr

    def test_unknown_status_lists_the_allowed_ones(self, eorch_home: Path) -> None:
        proc = eorch("runs", "--status", "done", check=False)
        assert proc.returncode == 2
        assert "unknown status 'done'" in proc.stderr and "succeeded" in proc.stderr and "Traceback" not in proc.stderr

    def test_ambiguous_name_lists_the_candidates(self, history: dict[str, str], eorch_home: Path) -> None:
        ctx = Context.load()
        with ctx.db() as s:
            s.add(Run(id="a9990001", name="tiny", host="local", kind="command", command=["true"], env={},
                      status="succeeded", phase="stopped", created_at=utcnow(), log_offset=0,
                      events_offset=0, cancel_requested=False))
        proc = eorch("show", "tiny", check=False)
        assert proc.returncode == 2
        assert "a9990001 (tiny, succeeded" in proc.stderr and "f1330bc2 (tiny, failed" in proc.stderr

    def test_json_keeps_iso_times(self, history: dict[str, str]) -> None:
        record = json.loads(eorch("show", history["failed"], "--json").stdout)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["ended_at"])


def test_on_a_narrow_terminal_long_fields_wrap_under_their_column(tmp_path: Path) -> None:
    """At 80 columns the message and the hint go on under their column, not at the terminal's left edge;
    piped, each stays one line (to grep and to paste)."""
    log = tmp_path / "nccl.log"
    log.write_text("[rank0]:[E1201 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600010 "
                   "milliseconds before timing out.\n")
    shown = in_terminal("log", "analyze", str(log))
    rows = [row for row in shown.split("\n") if row.strip()]
    rows = rows[next(i for i, row in enumerate(rows) if row.startswith("  phase")):]  # (the file's long name above)
    assert all(len(row) <= 80 for row in rows), rows
    at = next(i for i, row in enumerate(rows) if row.startswith("  root cause"))
    message = rows[at + 1:next(i for i, row in enumerate(rows) if row.startswith("  hint"))]
    assert len(message) > 1 and all(row.startswith(" " * 14) for row in message)
    assert " ".join(row.strip() for row in message).endswith("ran for 600010 milliseconds before timing out.")
    piped = eorch("log", "analyze", str(log)).stdout
    assert "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) " \
           "ran for 600010 milliseconds before timing out." in piped


def test_on_a_narrow_terminal_the_verdict_row_wraps_under_its_column(tmp_path: Path) -> None:
    """A verdict qualified at length (a log that stops while serving) goes on under the values at 80 columns,
    not at the terminal's left edge (a stranger's test, session 38); wide or piped, it is one row."""
    log = tmp_path / "serve.log"
    log.write_text("INFO 12-06 10:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
                   "INFO:     Application startup complete.\n")
    rows = in_terminal("log", "analyze", str(log)).split("\n")
    at = next(i for i, row in enumerate(rows) if row.startswith("  phase"))
    assert rows[at].rstrip().endswith("verdict: not failed so far") and len(rows[at]) <= 80
    assert rows[at + 1] == " " * 14 + "(the log does not show the job ending)"
    wide = in_terminal("log", "analyze", str(log), columns=200)
    assert "verdict: not failed so far (the log does not show the job ending)" in wide
    assert "verdict: not failed so far (the log does not show the job ending)" in eorch("log", "analyze", str(log)).stdout


def test_on_a_narrow_terminal_a_long_paths_size_goes_whole_under_it(tmp_path: Path) -> None:
    """A path too long for 80 columns with "N lines, M bytes" after it: the size on the next row, under the
    values, not broken between "lines," and "bytes" (a stranger's test, session 39); piped, one row."""
    log = tmp_path / ("vllm-serve-" + "x" * 60 + ".log")
    log.write_text("INFO:     Application startup complete.\n")
    rows = in_terminal("log", "analyze", str(log)).split("\n")
    at = next(i for i, row in enumerate(rows) if row.endswith(".log"))
    assert rows[at + 1] == " " * 14 + "1 lines, 40 bytes"
    assert f"{log}  1 lines, 40 bytes" in eorch("log", "analyze", str(log)).stdout
