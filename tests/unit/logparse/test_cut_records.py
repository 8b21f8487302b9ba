"""A paste that starts inside a traceback vLLM logged record by record (v0's ``ERROR ... [engine.py:448]`` on every
line): the records above its exception line are its frames, not error lines of their own, even where the
innermost frame's ``raise`` statement stands between them (wild168 vd16: "9 error line(s), first at line 1:
answer = run_method(...)" beside the right root cause)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.logparse import analyze_bytes

VD16 = Path(__file__).resolve().parents[2] / "data" / "wild168" / "vd16_gpustack1800_valueerror_kv_v0.log"


def test_the_records_above_a_cut_tracebacks_exception_line_are_its_frames() -> None:
    lines = VD16.read_bytes().splitlines(keepends=True)
    for shown in (lines, lines[:10]):  # the paste, and its records alone
        a = analyze_bytes(b"".join(shown))
        rc = a.root_cause
        assert a.failed and rc is not None and (rc.exception, rc.line_no) == ("ValueError", 10)
        assert a.first_error is None  # (no error line of its own is left to show)
