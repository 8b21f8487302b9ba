"""Logs copied as ``cat -v`` shows them (issue 15): carriage returns written ``^M``, escape bytes ``^[``.  vLLM ends
every line of a multi-line record but its last with ``\\r\\n``; written out, the record's lines end in ``^M`` and
a traceback's header (``...: Traceback (most recent call last):^M``) is no header.  Read with the bytes back,
the verdict is the log's; and a record's line that a terminal overwrote in the copy does not end its traceback
as a made-up exception."""

from __future__ import annotations

import io

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analyze import analyze_stream

_H = "ERROR 03-25 08:34:50 [core.py:340] "


def _shown(head: str, lines: tuple[str, ...]) -> str:
    """A record's lines, each after ``head``, as ``cat -v`` shows them: every one ending in ``^M``."""
    return "".join(head + line + "^M\n" for line in lines)


_ENGINE = _shown(_H, (
    "EngineCore hit an exception: Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 332, in run_engine_core',
    "    engine_core = EngineCoreProc(*args, **kwargs)",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 62, in __init__',
    "    num_gpu_blocks, num_cpu_blocks = self._initialize_kv_caches(",
    "ValueError: not enough values to unpack (expected 22, got 21)",
)) + _H.rstrip() + "\n" + (
    "CRITICAL 03-25 08:34:50 [core_client.py:269] Got fatal signal from worker processes, shutting down. See "
    "stack trace above for root cause issue.\n")


def test_a_records_line_ends_written_as_caret_m_are_read_as_carriage_returns() -> None:
    notes: list[str] = []
    a = analyze_stream(io.BytesIO(_ENGINE.encode()), 100, notes)  # small chunks: a "^M" cut between two of them
    rc = a.root_cause
    assert a.failed and rc is not None and rc.exception == "ValueError"
    assert rc.message == "not enough values to unpack (expected 22, got 21)"
    assert a.lines == 8 and a.bytes == len(_ENGINE)
    assert any("carriage returns (^M) written out as text" in n for n in notes)


def test_a_line_overwritten_in_the_copy_does_not_end_the_traceback_as_its_exception() -> None:
    """A terminal's copy where another line overwrote the end of one of the record's (its ``^M`` lost with it):
    ``...[core.py:340]py:1140] Model loading took ...`` is no exception line (Python writes ``Name: message``)."""
    lines = _ENGINE.splitlines(keepends=True)
    mangled = "".join(lines[:3]) + _H.rstrip() + "py:1140] Model loading took 40.3172 GB and 42.64 seconds\n" + "".join(
        lines[3:])
    rc = analyze_bytes(mangled.encode()).root_cause
    assert rc is not None and rc.exception == "ValueError", rc
    assert "not enough values to unpack" in rc.message


def test_an_sglang_scheduler_traceback_with_pid_and_place_on_every_line() -> None:
    """``ts LEVEL pid [ TPn PPn file.py:N] `` on each line of a record (an SGLang build's layout), cut inside the
    traceback as a paste is, line ends written ``^M``: failed, the scheduler's traceback read as one."""
    head = "2025-06-18 13:43:34 ERROR 31423 [ TP2 PP0 scheduler.py:2547] "
    log = _shown(head, (
        "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2528, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 735, in event_loop_pp',
        "    mbs[mb_id] = sel",
    ))
    a = analyze_bytes(log.encode())
    assert a.failed and a.root_cause is not None
    assert a.root_cause.traceback.splitlines()[0].startswith("Scheduler hit an exception: Traceback")
    whole = log + head + "IndexError: list index out of range^M\n" + head.rstrip() + "\n"
    rc = analyze_bytes(whole.encode()).root_cause
    assert rc is not None and rc.exception == "IndexError" and rc.message == "list index out of range"
