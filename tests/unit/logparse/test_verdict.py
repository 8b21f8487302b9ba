"""Failure verdicts: causes, symptoms, clean shutdowns, empty errors."""

from __future__ import annotations

from orchestrator.logparse import LogParser, Phase, PhaseChanged, RootCauseFound

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


# --- a lone ERROR record (vLLM rejecting one request) is evidence, not a failure ---------------------------

API = b"(APIServer pid=7) "
REJECTED = API + b"ERROR 11-29 14:29:17 [exception.py:16] Exception caught. Request id: None\n"
UP = (API + b"INFO 11-29 14:29:05 [launcher.py:195] Route: /v1/completions, Methods: POST\n"
      b"INFO:     Application startup complete.\n")
SERVED = b'INFO:     127.0.0.1:43892 - "POST /v1/completions HTTP/1.1" 200 OK\n'
ANSWERED_400 = b'INFO:     127.0.0.1:43880 - "POST /v1/completions HTTP/1.1" 400 Bad Request\n'
ANSWERED_500 = b'INFO:     127.0.0.1:43880 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
THROUGHPUT = (API + b"INFO 11-29 14:29:25 [loggers.py:335] Engine 000: Avg prompt throughput: 2.0 tokens/s, "
              b"Avg generation throughput: 6.4 tokens/s, Running: 0 reqs, Waiting: 0 reqs\n")
SIGTERM = (API + b"INFO 11-29 14:29:28 [launcher.py:254] [shutdown] API server: shutdown triggered\n"
           b"(Worker pid=9) INFO 11-29 14:29:28 [multiproc_executor.py:843] Parent process exited, terminating "
           b"worker queues\nINFO:     Application shutdown complete.\n")
WORKER_DIED = (b"(EngineCore pid=8) ERROR 11-29 14:30:04 [multiproc_executor.py:381] Worker proc VllmWorker-0 "
               b"died unexpectedly (exit code: -9), shutting down executor.\n")
CRASH = (b"(Worker pid=9) ERROR 11-29 14:30:04 [multiproc_executor.py:1063] WorkerProc hit an exception.\r\n"
         b"(Worker pid=9) ERROR 11-29 14:30:04 [multiproc_executor.py:1063] Traceback (most recent call last):\r\n"
         b'(Worker pid=9) ERROR 11-29 14:30:04 [multiproc_executor.py:1063]   File "x.py", line 1, in f\r\n'
         b"(Worker pid=9) ERROR 11-29 14:30:04 [multiproc_executor.py:1063] RuntimeError: Unsupported CPU "
         b"attention configuration: head_dim=16\n")


def test_lone_error_record_while_serving_is_not_a_failure() -> None:
    """One rejected request, then more requests served: running, not failed, no root cause; the error is
    counted, kept as the first error, and announced as an ErrorSeen event."""
    events, p = parse_all(UP + SERVED + REJECTED + ANSWERED_400 + SERVED + THROUGHPUT)
    a = p.analysis()
    assert (a.failed, a.phase, a.root_cause) == (False, Phase.RUNNING, None)
    assert a.errors == 1
    assert a.first_error is not None and a.first_error.message == "Exception caught. Request id: None"
    assert a.first_error.process == "APIServer" and a.first_error.signature == "request_error"
    assert [s.id for s in a.signatures] == ["request_error"]
    assert [e.kind for e in events].count("error_seen") == 1
    assert Phase.FAILED not in [e.phase for e in events if isinstance(e, PhaseChanged)]


def test_lone_error_record_never_reports_phase_failed_on_the_way() -> None:
    """Fed line by line (a live follower), no intermediate reading says failed."""
    data = UP + SERVED + REJECTED + ANSWERED_400 + SERVED
    p = LogParser()
    for line in data.splitlines(keepends=True):
        p.feed(line)
        a = p.analysis()
        assert not a.failed and a.phase is not Phase.FAILED


def test_lone_error_record_then_clean_shutdown_is_stopped() -> None:
    """Served, one rejected request, served again, SIGTERM: stopped, not failed, no root cause."""
    _, p = parse_all(UP + SERVED + REJECTED + ANSWERED_400 + SERVED + SIGTERM)
    a = p.analysis()
    assert (a.failed, a.phase, a.root_cause) == (False, Phase.STOPPED, None)


def test_unanswered_error_record_is_the_candidate_cause_but_not_a_failure() -> None:
    """An error with no sign of life after it: not failed by itself, but it is what to blame if the process
    then dies (the monitor marks the run failed on a non-zero exit or a lost process)."""
    _, p = parse_all(UP + SERVED + REJECTED)
    a = p.analysis()
    assert not a.failed and a.phase is Phase.RUNNING
    assert a.root_cause is not None and a.root_cause.message == "Exception caught. Request id: None"


def test_a_500_answer_is_no_sign_of_life() -> None:
    """An HTTP 500 after the error does not clear it."""
    _, p = parse_all(UP + SERVED + REJECTED + ANSWERED_500)
    a = p.analysis()
    assert not a.failed and a.root_cause is not None and a.root_cause.line_no == 4


def test_error_record_then_process_death_blames_the_error() -> None:
    """The lone error *is* the cause when the process dies right after it with no exception."""
    _, p = parse_all(UP + SERVED + REJECTED + WORKER_DIED)
    a = p.analysis()
    assert a.failed and a.phase is Phase.FAILED
    assert a.root_cause is not None and a.root_cause.message == "Exception caught. Request id: None"


def test_answered_error_record_then_crash_blames_the_crash() -> None:
    """An error the server got past is not the cause of a later crash: the traceback is."""
    _, p = parse_all(UP + REJECTED + ANSWERED_400 + SERVED + CRASH)
    a = p.analysis()
    assert a.failed and a.phase is Phase.FAILED
    assert a.root_cause is not None and a.root_cause.exception == "RuntimeError"


def test_answered_error_record_then_bare_death_blames_the_death() -> None:
    """An error the server got past, then a worker dies with no exception: the death, not the old error."""
    _, p = parse_all(UP + REJECTED + ANSWERED_400 + SERVED + WORKER_DIED)
    a = p.analysis()
    assert a.failed
    assert a.root_cause is not None and a.root_cause.signature == "worker_died"


def test_unanswered_error_then_crash_still_blames_the_crash() -> None:
    """A traceback beats an error line even when nothing showed life in between."""
    _, p = parse_all(UP + REJECTED + CRASH)
    rc = p.analysis().root_cause
    assert rc is not None and rc.exception == "RuntimeError"


def test_script_error_then_progress_is_not_a_failure() -> None:
    """A script's `ERROR: <text>` followed by more progress: the job went on."""
    _, p = parse_all(b"Processing 10 samples\nProcessed 3/10 samples\nERROR: sample 4 has no text\n"
                     b"Processed 4/10 samples\nProcessed 10/10 samples\nDone.\n")
    a = p.analysis()
    assert (a.failed, a.phase, a.root_cause) == (False, Phase.STOPPED, None)
    assert a.first_error is not None and a.first_error.message == "sample 4 has no text"


def test_error_record_after_a_long_healthy_stretch_in_big_regions() -> None:
    """The pending error widens the funnel (request lines are read again) whatever the read size."""
    body = SERVED * 20_000 + THROUGHPUT
    quiet = b"(EngineCore pid=8) DEBUG 11-29 14:29:20 [core.py:1] nothing to see here\n" * 2_000  # ~150 KB
    data = UP + body + REJECTED + ANSWERED_400 + body + REJECTED + quiet + SERVED + body + REJECTED
    whole_events, whole = parse_all(data)
    for size in (4096, 65536, 1 << 20):
        events, parser = parse_all(data, [size] * (len(data) // size))
        assert [e.to_dict() for e in events] == [e.to_dict() for e in whole_events]
        assert parser.analysis() == whole.analysis()
    a = whole.analysis()
    assert not a.failed and a.errors == 3
    assert a.root_cause is not None and a.root_cause.line_no == a.lines  # the last one is unanswered
    cleared = [e.line_no for e in whole_events if isinstance(e, RootCauseFound)]
    assert len(cleared) == 3  # each error became the candidate in turn: the first two were cleared
