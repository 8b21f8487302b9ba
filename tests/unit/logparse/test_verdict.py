"""Failure verdicts: causes, symptoms, clean shutdowns, empty errors."""

from __future__ import annotations

from orchestrator.logparse import Phase

from .conftest import parse_all

PARENT = b"(Worker_TP3 pid=9) INFO 02-21 21:43:13 [multiproc_executor.py:732] Parent process exited, terminating worker\n"
SHUT = b"(Worker_TP3 pid=9) INFO 02-21 21:43:13 [multiproc_executor.py:785] WorkerProc shutting down.\n"


def test_symptoms_after_a_clean_shutdown_are_not_a_failure() -> None:
    """`Done.` then workers exiting: stopped, not failed; the symptoms are still recorded."""
    _, p = parse_all(b"Processed 10/10 samples\nDone.\n" + PARENT + SHUT)
    a = p.analysis()
    assert (a.failed, a.phase, a.root_cause) == (False, Phase.STOPPED, None)
    assert {s.id for s in a.signatures} == {"parent_exited", "worker_shutdown"}


def test_symptoms_alone_are_a_failure() -> None:
    """Workers shutting down with no clean exit and no exception: failed, blamed on the first symptom."""
    _, p = parse_all(b"Processed 3/10 samples\n" + SHUT + PARENT)
    a = p.analysis()
    assert a.failed and a.phase is Phase.FAILED
    assert a.root_cause is not None and a.root_cause.signature == "worker_shutdown"


def test_empty_error_line_is_a_failure_with_empty_message() -> None:
    """A script's `ERROR: ` with nothing after it is still a failure."""
    events, p = parse_all(b"Processed 3/10 samples\nERROR: \n" + SHUT)
    a = p.analysis()
    assert a.failed and a.root_cause is not None
    assert (a.root_cause.exception, a.root_cause.message, a.root_cause.signature) == (None, "", "empty_error")
    assert any(e.kind == "error_seen" for e in events)
    assert [e.kind for e in events].count("root_cause_found") == 1


def test_symptoms_never_beat_a_cause() -> None:
    """A real traceback after the symptoms is still the root cause."""
    _, p = parse_all(PARENT + b"Traceback (most recent call last):\n  File \"a\", line 1\nOSError: disk full\n")
    rc = p.analysis().root_cause
    assert rc is not None and rc.exception == "OSError"


def test_warning_tracebacks_are_not_causes() -> None:
    """A traceback inside a WARNING record (handled) does not fail the job."""
    rec = "(APIServer pid=1) WARNING 11-29 10:00:00 [x.py:1] "
    data = "\r\n".join(rec + t for t in ["optional import failed", "Traceback (most recent call last):",
                                         '  File "x.py", line 1', "ImportError: no flash-attn"]) + "\n"
    _, p = parse_all(data.encode())
    assert not p.analysis().failed


def test_root_cause_event_when_it_changes() -> None:
    """RootCauseFound fires once per change: a symptom first, then the real cause."""
    events, _ = parse_all(SHUT + b"Traceback (most recent call last):\n  File \"a\", line 1\nOSError: x\n")
    found = [e.to_dict()["root_cause"]["signature"] or e.to_dict()["root_cause"]["exception"]
             for e in events if e.kind == "root_cause_found"]
    assert found == ["worker_shutdown", "OSError"]


def test_events_are_json_able_with_kind() -> None:
    """Every event has a `kind` and a line number and survives json.dumps."""
    import json

    events, _ = parse_all(b"(Worker_TP0 pid=1) INFO 02-21 1 [a.py:1] Starting to load model m\n"
                          b"\rLoading safetensors checkpoint shards: 50% Completed | 1/2 [00:01<00:01, 1.0it/s]\n"
                          b"ERROR: \n" + SHUT)
    for e in events:
        d = e.to_dict()
        assert d["kind"] == e.kind and d["line_no"] >= 1
        json.dumps(d)
