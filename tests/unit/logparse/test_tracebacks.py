"""Tracebacks are reassembled whole, per process, prefix-stripped, chains included."""

from __future__ import annotations

from orchestrator.logparse.events import TracebackCompleted

from .conftest import parse_all


def _record(proc: str, lines: list[str]) -> list[bytes]:
    head = f"({proc}) ERROR 02-21 21:43:12 [multiproc_executor.py:863] "
    return [(head + t + ("\r\n" if k < len(lines) - 1 else "\n")).encode() for k, t in enumerate(lines)]


def _tbs(events: list[object]) -> list[TracebackCompleted]:
    return [e for e in events if isinstance(e, TracebackCompleted)]


def test_eight_interleaved_workers_give_eight_whole_tracebacks() -> None:
    """Lines of 8 workers' records interleaved one by one still give 8 clean tracebacks."""
    streams = [_record(f"Worker_TP{i} pid={100 + i}", [
        "WorkerProc hit an exception.", "Traceback (most recent call last):",
        f'  File "w.py", line {i}, in step', "    assert len(request.block_hashes) >= num_full_blocks",
        "AssertionError"]) for i in range(8)]
    data = b"".join(s[k] for k in range(5) for s in streams)
    events, p = parse_all(data)
    tbs = _tbs(events)
    assert sorted(t.process for t in tbs) == [f"Worker_TP{i}" for i in range(8)]
    for t in tbs:
        i = int(t.process[-1])
        assert t.text == ("Traceback (most recent call last):\n"
                          f'  File "w.py", line {i}, in step\n'
                          "    assert len(request.block_hashes) >= num_full_blocks\nAssertionError")
        assert (t.exception, t.message) == ("AssertionError", "")
    rc = p.analysis().root_cause
    assert rc is not None and rc.process == "Worker_TP0" and rc.signature == "block_hasher_missing"


def test_chained_traceback_is_one_and_blames_the_first_exception() -> None:
    """`During handling of the above exception` joins both parts; the first exception is the cause."""
    data = (b"Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n"
            b"KeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\n"
            b"Traceback (most recent call last):\n  File \"a.py\", line 3, in f\n    raise RuntimeError('y')\n"
            b"RuntimeError: y\nnext unrelated line\n")
    events, _ = parse_all(data)
    (tb,) = _tbs(events)
    assert (tb.exception, tb.message, tb.process) == ("KeyError", "'x'", "main")
    assert "During handling" in tb.text and tb.text.endswith("RuntimeError: y")


def test_process_header_names_a_raw_traceback() -> None:
    """`Process EngineCore:` before a raw traceback attributes it to EngineCore."""
    data = b"Process EngineCore:\nTraceback (most recent call last):\n  File \"c.py\", line 1\nValueError: v\n"
    events, _ = parse_all(data)
    assert _tbs(events)[0].process == "EngineCore"


def test_worker_traceback_wins_over_engine_echo_and_engine_dead() -> None:
    """The echo `Worker failed with error 'boom'` points back to the worker's RuntimeError('boom')."""
    data = (b"Traceback (most recent call last):\n  File \"m.py\", line 1\n"
            b"ValueError: an unrelated earlier problem\nok\n"
            + b"".join(_record("Worker_TP5 pid=5", ["WorkerProc hit an exception.",
                                                   "Traceback (most recent call last):",
                                                   '  File "w.py", line 9, in f', "RuntimeError: boom"]))
            + b"".join(_record("EngineCore_DP0 pid=1", ["EngineCore encountered a fatal error.",
                                                        "Traceback (most recent call last):",
                                                        '  File "e.py", line 1, in g',
                                                        ("RuntimeError: Worker failed with error 'boom', please "
                                                         "check the stack trace above for the root cause")]))
            + b"Traceback (most recent call last):\n  File \"m.py\", line 2\n"
              b"vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n")
    _, p = parse_all(data)
    rc = p.analysis().root_cause
    assert rc is not None
    assert (rc.exception, rc.message, rc.process) == ("RuntimeError", "boom", "Worker_TP5")


def test_raw_stream_prefixed_traceback_from_a_016_worker() -> None:
    """0.16 prefixes raw stderr too: `(Worker_TP2 pid=4) Traceback ...` lines group by worker."""
    lines = ["Traceback (most recent call last):", '  File "x.py", line 1, in f', "    f()",
             "RuntimeError: NCCL error: unhandled system error"]
    data = b"".join(f"(Worker_TP2 pid=4) {t}\n".encode() for t in lines) + b"(Worker_TP2 pid=4) INFO 02-21 1 x\n"
    events, p = parse_all(data)
    (tb,) = _tbs(events)
    assert tb.process == "Worker_TP2" and tb.text == "\n".join(lines)
    assert p.analysis().root_cause is not None and p.analysis().root_cause.signature == "nccl_error"
