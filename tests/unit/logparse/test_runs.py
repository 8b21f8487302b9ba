"""Where a log of several tries is cut: ``runs.starts`` finds the lines ``RUN_START`` matches on, by literal
search (a regex alternation with no literal prefix scanned ~150 MB/s and halved the speed of a serving log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logforms import plain

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.runs import RUN_START, RunSplitter, earlier_runs, starts

_PIECES = [
    b"vLLM API server version ", b"vLLM API server version", b"Initializing a LLM engine (v",
    b"Initializing an V1 LLM engine (v", b"Initializing an LLM engine (v0.6.3)", b"LLM engine (v",
    b"Initializing  a V1 LLM engine (v", b"Initializing an LLM engine (", b"Initializing a V1 LLM engine (v",
    b"INFO 02-21 21:43:13 [engine.py:12] ", b"\n", b"\r\n", b"x", b"Initializing", b" a ", b"V1 ",
    b"[api_utils.py:286] non-default args: ", b"] non-default", b" args: ",
]


def _lines_of(chunk: bytes, positions: list[int]) -> list[int]:
    return sorted({chunk.rfind(b"\n", 0, p) + 1 for p in positions})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_starts_are_on_the_lines_the_regex_matches_on(pieces: list[bytes]) -> None:
    chunk = b"".join(pieces)
    want = _lines_of(chunk, [m.start() for m in RUN_START.finditer(chunk)])
    assert _lines_of(chunk, starts(chunk)) == want


def test_an_engine_line_needs_its_initializing_words() -> None:
    chunk = b"a\nINFO LLM engine (v0.6)\nINFO Initializing an LLM engine (v0.6.3) with config\n"
    assert _lines_of(chunk, starts(chunk)) == [chunk.index(b"INFO Init")]


REAL = Path(__file__).resolve().parents[2] / "data" / "real"
TRIES = {name: (REAL / name).read_bytes() for name in (
    "r27_flashinfer_import_typeerror_py311.log", "r20_dgxspark_dflash_clean_sigterm_shutdown.log",
    "r26_lambo_clean_serving_request_validation_errors.log", "r22_t4_triton_kernel_image_invalid.log")}


def _feed_in_chunks(data: bytes, sizes: list[int], restore: bool) -> tuple[list[dict[str, object]], RunSplitter]:
    """As the follower feeds: chunk by chunk, optionally snapshotted through JSON and restored after each,
    re-fed from ``line_end_offset``."""
    splitter, events, pos = RunSplitter(), [], 0
    for size in [*sizes, len(data)]:
        end = min(len(data), pos + size)
        events += splitter.feed(data[pos:end])
        pos = end
        if restore:
            splitter = RunSplitter.restore(json.loads(json.dumps(splitter.snapshot())))
            pos = splitter.line_end_offset
    events += splitter.feed(data[pos:]) + splitter.finish()
    return [e.to_dict() for e in events], splitter


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(st.sampled_from(sorted(TRIES)), min_size=1, max_size=3),
       fractions=st.lists(st.floats(0, 1), max_size=8), restore=st.booleans(), plain_endings=st.booleans())
def test_tries_read_alike_however_the_log_comes(names: list[str], fractions: list[float], restore: bool,
                                                plain_endings: bool) -> None:
    """Several tries in one log, fed whole or in chunks cut anywhere (a start line split between two), with
    or without a snapshot and restore after each (the follower): the same events, verdict and earlier runs."""
    data = b"".join(TRIES[n] if TRIES[n].endswith(b"\n") else TRIES[n] + b"\n" for n in names)
    data = plain(data) if plain_endings else data
    whole_events, whole = _feed_in_chunks(data, [], False)
    sizes = [b - a for a, b in zip([0, *sorted({int(f * len(data)) for f in fractions})],
                                   sorted({int(f * len(data)) for f in fractions}))]
    events, splitter = _feed_in_chunks(data, sizes, restore)
    assert events == whole_events
    assert splitter.analysis() == whole.analysis()
    assert splitter.analysis().to_json("x") == analyze_bytes(data).to_json("x")


def test_events_are_numbered_as_lines_of_the_whole_log() -> None:
    """A failed try, then a failed one: the second's root cause event and its analysis say the same line, the
    log's (``grep -n``), not the line within its try."""
    first, second = TRIES["r27_flashinfer_import_typeerror_py311.log"], TRIES["r22_t4_triton_kernel_image_invalid.log"]
    events, splitter = _feed_in_chunks(first + second, [], False)
    a = splitter.analysis()
    at = RUN_START.search(second)
    assert at is not None
    assert len(a.earlier) == 1 and a.first_line == first.count(b"\n") + second[:at.start()].count(b"\n") + 1
    assert a.root_cause is not None and a.root_cause.line_no > a.first_line
    found = [e for e in events if e["kind"] == "root_cause_found"]
    assert found[-1]["root_cause"]["line_no"] == a.root_cause.line_no == found[-1]["line_no"]
    line = (first + second).split(b"\n")[a.root_cause.line_no - 1]
    assert b"Traceback" in line or a.root_cause.exception is None or a.root_cause.exception.encode() in line


def test_a_start_line_cut_between_two_chunks_still_starts_a_run() -> None:
    """The follower's chunks end anywhere: cut around the line where the second try starts (and in its
    marker), the log reads as when fed whole, restored from a snapshot at the cut or not."""
    first, second = TRIES["r27_flashinfer_import_typeerror_py311.log"], TRIES["r20_dgxspark_dflash_clean_sigterm_shutdown.log"]
    data = first + second
    m = RUN_START.search(data, len(first))
    assert m is not None
    line_start, line_end = data.rfind(b"\n", 0, m.start()) + 1, data.find(b"\n", m.end()) + 1
    whole_events, whole = _feed_in_chunks(data, [], False)
    assert len(whole.analysis().earlier) == 1 and not whole.analysis().failed
    cuts = {line_start - 1, line_start, line_start + 1, m.start() + 1, m.start() + 9, m.end() - 1, line_end - 2,
            line_end - 1, line_end}  # before, at and after the line's start and end; inside its marker
    for cut in sorted(cuts):
        for restore in (False, True):
            events, splitter = _feed_in_chunks(data, [cut], restore)
            assert (events, splitter.analysis()) == (whole_events, whole.analysis()), (cut, restore)


def test_the_snapshot_stays_small_after_many_tries() -> None:
    """Forty failed tries (a script restarting a server that never comes up): the follower writes the snapshot
    at every commit, so it keeps at most KEEP_EARLIER earlier runs, without their tracebacks."""
    splitter = RunSplitter()
    splitter.feed(TRIES["r22_t4_triton_kernel_image_invalid.log"] * 40)
    snap = splitter.snapshot()
    assert len(snap["tries"]["earlier"]) == 16 and len(json.dumps(snap)) < 150 * 1024
    assert splitter.analysis().earlier[-1].root_cause is not None


def test_tries_are_numbered_as_in_the_whole_log_when_the_earliest_are_not_kept() -> None:
    """Forty tries: the 16 kept before the last are tries 24-39 of 40, and a splitter restored from a snapshot
    goes on counting (the follower's verdict says what ``log analyze`` says)."""
    data = TRIES["r22_t4_triton_kernel_image_invalid.log"]
    whole = RunSplitter()
    whole.feed(data * 40)
    a = whole.analysis()
    assert a.try_no == 40 and [e.try_no for e in a.earlier] == list(range(24, 40))
    assert [e["try"] for e in a.to_json("x")["earlier_runs"]] == list(range(24, 40)) and a.to_json("x")["tries"] == 40
    half = RunSplitter()
    half.feed(data * 30)
    restored = RunSplitter.restore(json.loads(json.dumps(half.snapshot())))
    restored.feed(data * 10)
    assert restored.analysis() == a
    assert [e["try"] for e in earlier_runs(whole.snapshot())] == list(range(24, 40))


def test_a_snapshot_without_try_numbers_numbers_its_kept_tries_in_order() -> None:
    """A follower's snapshot written before tries were numbered: its kept runs are tries 1, 2, ... (nothing was
    dropped before 16 of them), and the current one comes after them."""
    splitter = RunSplitter()
    splitter.feed(TRIES["r22_t4_triton_kernel_image_invalid.log"] * 3)
    snap = json.loads(json.dumps(splitter.snapshot()))
    del snap["tries"]["try"]
    for e in snap["tries"]["earlier"]:
        del e["try"]
    restored = RunSplitter.restore(snap)
    assert [e.try_no for e in restored.analysis().earlier] == [1, 2] and restored.analysis().try_no == 3


def test_a_partial_line_is_given_back_only_when_held_whole() -> None:
    """What the parser gives back is exactly the unread line, and its tail forgets it; a line after tqdm
    frames longer than the tail keeps cannot be given back, and stays."""
    from orchestrator.logparse import LogParser

    p = LogParser()
    p.feed(b"ok\nINFO vLLM API server")
    assert p.take_partial_line() == b"INFO vLLM API server" and not p.partial_line
    assert p.tail_lines == ["ok"]
    p = LogParser()
    p.feed(b"ok\n" + b"frame\r" * 500 + b"vLLM API server")
    assert p.take_partial_line() is None and p.partial_text == b"vLLM API server"


def test_a_supervisor_restarting_a_0_2x_server_starts_a_new_try_at_its_non_default_args() -> None:
    """vLLM 0.2x's banner names no version: a server restarted by a supervisor (SageMaker's supervisord) after
    dying starts its next try at ``non-default args:``; the log's verdict is that try's."""
    api, core = "(APIServer pid={}) ", "(EngineCore pid=76) "
    first = "".join([
        api.format(14) + "INFO 09-28 18:49:56 [api_utils.py:286] non-default args: {'port': 8080}\n",
        core + "INFO 09-28 18:50:48 [core.py:123] Initializing a V1 LLM engine (v0.30.0) with config: model='g'\n",
        core + "ERROR 09-28 18:51:25 [core.py:1100] EngineCore failed to start.\r\n",
        core + "ERROR 09-28 18:51:25 [core.py:1100] Traceback (most recent call last):\r\n",
        core + "ERROR 09-28 18:51:25 [core.py:1100] torch.OutOfMemoryError: CUDA out of memory. Tried to "
               "allocate 2.62 GiB.\n",
        "2026-09-28 18:51:31,053 WARN exited: app (exit status 1; not expected)\n",
        "2026-09-28 18:51:32,056 INFO spawned: 'app' with pid 157\n",
    ])
    second = api.format(157) + "INFO 09-28 18:51:48 [api_utils.py:286] non-default args: {'port': 8080}\n"
    a = analyze_bytes((first + second).encode())
    assert not a.failed and len(a.earlier) == 1 and a.earlier[0].failed and a.first_line == 8


def _try(pid: int, error: str | None) -> str:
    api = f"(APIServer pid={pid}) "
    text = api + "INFO 04-22 21:30:42 [utils.py:233] non-default args: {'model': 'Qwen/Qwen2.5-3B-Instruct-AWQ'}\n"
    if error is not None:
        text += "".join(api + line + "\n" for line in [
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/site-packages/vllm/worker/worker.py", line 120, in init_device',
            error])
        text += "2026-04-22 21:30:50,053 WARN exited: app (exit status 1; not expected)\n"  # the restart policy's
    return text


@pytest.mark.parametrize("errors, failed", [
    (["ValueError: Free memory on device cuda:0 (3.22/4.0 GiB) on startup is less than desired"] * 2, True),
    (["ValueError: Free memory on device cuda:0 (3.22/4.0 GiB) on startup is less than desired"], False),
    (["KeyError: 'layers.5.weight'", "ValueError: Free memory on device cuda:0 is less than desired"], False),
], ids=["crash-loop", "one-failure", "two-different"])
def test_tries_that_keep_failing_the_same_way_make_a_crash_loop(errors: list[str], failed: bool) -> None:
    """A restart policy (docker's, a supervisor's) starting the server again after each death: when the last
    tries all failed of the same cause and the latest is only starting, the log's verdict is that failure."""
    log = "".join(_try(pid, error) for pid, error in enumerate(errors, 1)) + _try(9, None)
    a = analyze_bytes(log.encode())
    assert a.failed is failed and len(a.earlier) == len(errors)
    if failed:
        assert a.root_cause is not None and a.root_cause.exception == "ValueError" and a.root_cause.line_no < a.first_line
