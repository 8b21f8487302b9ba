"""Property: however the byte stream is cut into chunks (and snapshotted/restored between them), the
parser emits the same events and reaches the same verdict as when fed in one piece."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orchestrator.logparse import LogParser
from orchestrator.logparse.events import LogEvent

from .conftest import LOG_DIR, parse_all

FIXTURES = {p.name: p.read_bytes() for p in sorted(LOG_DIR.glob("*.log"))}

# Pieces that stress the splitter: every terminator, prefixes split from their \r, ANSI, NUL, bad UTF-8.
PIECES = [
    b"\n", b"\r", b"\r\n", b"\r\r\n", b"\x00", b"\xff\xfe", b"\x1b[31m", b"\x1b[0m",
    b"(Worker_TP3 pid=12) ", b"(EngineCore pid=7) INFO 11-29 10:02:27 [core.py:1512] ",
    b"(Worker_TP0 pid=1) ERROR 02-21 21:43:12 [multiproc_executor.py:863] ",
    b"Traceback (most recent call last):", b'  File "x.py", line 1, in f', b"    assert x",
    b"AssertionError", b"RuntimeError: Worker failed with error '', please check the stack trace above",
    b"During handling of the above exception, another exception occurred:",
    b"Loading safetensors checkpoint shards:  84% Completed | 54/64 [15:18<02:50, 17.00s/it]",
    b" 37%|###7      | 37/100 [00:01<00:02, 30.00it/s]", b"Processed 3/10 samples",
    b"Parent process exited, terminating worker", b"WorkerProc shutting down.", b"ERROR: ",
    b"[shutdown] API server: shutdown triggered", b"Done.", b"Loading weights took 3.20 seconds",
    b"init engine (profile, create kv cache, warmup model) took 9.1 s",
    b'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK', b"plain text ", b"Process EngineCore:",
    b"No available shared memory broadcast block found in 60 second.", b"NCCL error: unhandled system error",
    # a lone ERROR record (a rejected request) and the signs of life that clear it, or do not
    b"(APIServer pid=5) ERROR 11-29 14:29:17 [exception.py:16] Exception caught. Request id: None",
    b'INFO:     127.0.0.1:2 - "POST /v1/completions HTTP/1.1" 400 Bad Request',
    b'INFO:     127.0.0.1:3 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
    b"Engine 000: Avg prompt throughput: 2.0 tokens/s, Avg generation throughput: 6.4 tokens/s",
    b"INFO:     Application startup complete.",
]

streams = st.lists(st.sampled_from(PIECES), max_size=80).map(b"".join)


def _dicts(events: list[LogEvent]) -> list[dict[str, object]]:
    return [e.to_dict() for e in events]


def _cuts(data: bytes, fractions: list[float]) -> list[int]:
    points = sorted({int(f * len(data)) for f in fractions})
    return [b - a for a, b in zip([0, *points], points)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams, fractions=st.lists(st.floats(0, 1), max_size=12))
# A line read on a fast path (another writer's, no needle) that a new phase is reported at: its text as read.
@example(data=b"AssertionError\n(Worker_TP3 pid=12) \xff\xfe\n", fractions=[0.5])
def test_any_split_gives_same_events_and_verdict(data: bytes, fractions: list[float]) -> None:
    """Random streams of tricky pieces, cut anywhere."""
    whole_events, whole = parse_all(data)
    events, parser = parse_all(data, _cuts(data, fractions))
    assert _dicts(events) == _dicts(whole_events)
    assert parser.analysis() == whole.analysis()
    assert parser.line_end_offset == whole.line_end_offset


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(FIXTURES)), fractions=st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_fixture_any_split(name: str, fractions: list[float]) -> None:
    """Real and synthetic fixtures, cut anywhere."""
    data = FIXTURES[name]
    whole_events, whole = parse_all(data)
    events, parser = parse_all(data, _cuts(data, fractions))
    assert _dicts(events) == _dicts(whole_events)
    assert parser.analysis() == whole.analysis()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(streams, st.sampled_from(sorted(FIXTURES)).map(FIXTURES.__getitem__)),
       fractions=st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_snapshot_restore_anywhere(data: bytes, fractions: list[float]) -> None:
    """Snapshot after each chunk, restore through JSON, re-feed from line_end_offset: same result."""
    whole_events, whole = parse_all(data)
    parser = LogParser()
    events: list[LogEvent] = []
    pos = 0
    for size in [*_cuts(data, fractions), len(data)]:
        end = min(len(data), pos + size)
        events += parser.feed(data[pos:end])
        snap = json.loads(json.dumps(parser.snapshot()))
        parser = LogParser.restore(snap)
        pos = parser.line_end_offset  # the follower re-reads the partial line
    events += parser.feed(data[pos:])
    events += parser.finish()
    assert _dicts(events) == _dicts(whole_events)
    assert parser.analysis() == whole.analysis()


def test_cr_then_lf_across_chunks_is_one_terminator() -> None:
    """A \\r ending one chunk and a \\n starting the next make one line break, also across a restore."""
    parser = LogParser()
    parser.feed(b"first\r")
    assert parser.analysis().lines == 1
    parser = LogParser.restore(parser.snapshot())
    parser.feed(b"\nsecond\n")
    parser.finish()
    assert parser.analysis().lines == 2
    assert parser.line_end_offset == len(b"first\r\nsecond\n")


def test_snapshot_stays_small_with_a_huge_traceback() -> None:
    """An open traceback of 10 MB keeps the snapshot under ~100 KiB."""
    body = b"".join(b'  File "x.py", line %d, in f\n' % i for i in range(300_000))
    parser = LogParser()
    parser.feed(b"Traceback (most recent call last):\n" + body)
    assert len(json.dumps(parser.snapshot())) < 100 * 1024


def test_snapshot_stays_small_after_many_crashes() -> None:
    """Twenty copies of the 8-worker crash: evidence keeps the earliest items, capped."""
    data = (LOG_DIR / "v016_tp8_block_hasher_crash.log").read_bytes() * 20
    _, parser = parse_all(data)
    assert len(json.dumps(parser.snapshot())) < 200 * 1024
    rc = parser.analysis().root_cause
    assert rc is not None and rc.process == "Worker_TP3"


@pytest.mark.parametrize("data", [b"Traceback (most recent call last):\r", b"a\rb\r",
                                  b'x\nTraceback (most recent call last):\r\n  File "a"\rValueError: x\r'])
def test_restored_mid_line_after_a_bare_cr_numbers_on(data: bytes) -> None:
    """A snapshot taken after a bare ``\\r`` (the numbered line goes on): restored, it numbers and settles on
    the same line as a parser that never stopped, wherever the cut."""
    whole_events, whole = parse_all(data)
    for cut in range(len(data) + 1):
        parser = LogParser()
        events = parser.feed(data[:cut])
        parser = LogParser.restore(json.loads(json.dumps(parser.snapshot())))
        events += parser.feed(data[parser.line_end_offset:]) + parser.finish()
        assert _dicts(events) == _dicts(whole_events), cut
        assert parser.analysis() == whole.analysis()


def test_a_line_a_restore_cut_between_its_cr_and_lf_stays_in_the_tail() -> None:
    """The parser ends a line at its ``\\r``; the tail waits for the ``\\n``.  A snapshot between them kept the
    line for neither, and a restored follower's verdict differed (an offline script's end, which the tail
    shows, read as its workers' deaths)."""
    data = b"Parent process exited, terminating worker\r\nParent process exited, terminating worker"
    _, whole = parse_all(data)
    parser = LogParser()
    parser.feed(data[:42])  # up to the "\r"
    parser = LogParser.restore(json.loads(json.dumps(parser.snapshot())))
    parser.feed(data[parser.line_end_offset:])
    parser.finish()
    assert parser.tail_lines == whole.tail_lines
    assert parser.analysis() == whole.analysis() and not whole.analysis().failed
