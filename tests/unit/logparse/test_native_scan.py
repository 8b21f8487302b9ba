"""Native search (Hyperscan, ``native.py``) and the pure funnel see exactly the same lines.

Hyperscan is a dependency wherever its wheel exists (Linux x86-64), so there these tests must run: a missing
install is a failure, not a skip.
"""

from __future__ import annotations

import platform
import random
import sys
from pathlib import Path

import pytest

from orchestrator.logparse import native
from orchestrator.logparse.funnel import Funnel, build_funnel
from orchestrator.logparse.phases import Phase
from orchestrator.logparse.signatures import load_catalogue

from .conftest import LOG_DIR, parse_all
from .test_big_regions import _big_log

DATA = LOG_DIR.parent
FIXTURES = sorted(p for d in ("logs", "real", "heldout", "gpu") for p in (DATA / d).glob("*.log"))


def test_hyperscan_is_installed_where_it_is_a_dependency() -> None:
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert native._hs is not None, "pip install -e . should have installed hyperscan"


needs_native = pytest.mark.skipif(native._hs is None, reason="no hyperscan wheel for this platform")


@needs_native
def test_literal_set_finds_every_start_brute_force_does() -> None:
    rng = random.Random(7)
    needles = (b"Error", b"rror", b"ERROR", b"aa", b"a", b"Traceback", b"x\ny")
    for _ in range(200):
        buf = bytes(rng.choice(b"aErorTcbkx\ny ") for _ in range(rng.randrange(0, 300)))
        start = rng.randrange(0, len(buf) + 1)
        end = rng.randrange(start, len(buf) + 1)
        want = sorted(i for n in needles for i in range(start, end - len(n) + 1) if buf.startswith(n, i))
        assert native.literal_set(needles).find(buf, start, end) == want
        assert native.literal_set(needles).occurs_in(buf[start:end]) == bool(want)


@pytest.mark.parametrize("flag", ["1", "0"])
def test_is_candidate_is_any_needle_in_the_line(flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, flag)
    rng = random.Random(11)
    relevant = (b"Error", b"rror", b"ERROR", b"a.b", b"Traceback")
    for _ in range(300):
        raw = bytes(rng.choice(b"aErorTcbk.ERO ") for _ in range(rng.randrange(0, 80)))
        assert Funnel.is_candidate(raw, relevant) == any(n in raw for n in relevant)
    assert not Funnel.is_candidate(b"Error", ())


@needs_native
def test_funnel_scan_native_and_pure_give_the_same_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hit positions may differ (overlaps, needles of one line), the lines they fall on may not."""
    funnel = build_funnel(load_catalogue())
    data = _big_log()
    for phase in (Phase.STARTING, Phase.SERVING, Phase.RUNNING):
        relevant = funnel.relevant(phase, False, False)
        found = {}
        for flag in ("1", "0"):
            monkeypatch.setenv(native.ENV, flag)
            hits = funnel.scan(data, 0, len(data), relevant)
            found[flag] = {data.rfind(b"\n", 0, h) for h in hits}
        assert found["1"] == found["0"], phase


@needs_native
@pytest.mark.parametrize("path", FIXTURES + [Path("big")], ids=lambda p: p.name)
def test_verdicts_and_events_equal_with_and_without_native(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _big_log() if path.name == "big" else path.read_bytes()
    for chunks in (None, [65536] * (len(data) // 65536), [4096] * min(len(data) // 4096, 200)):
        results = []
        for flag in ("1", "0"):
            monkeypatch.setenv(native.ENV, flag)
            events, parser = parse_all(data, chunks)
            results.append(([e.to_dict() for e in events], parser.analysis()))
        assert results[0] == results[1]


@needs_native
def test_catalogue_match_and_gate_agree_with_and_without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signatures found in one native pass over the line's UTF-8 are those the needle loop finds; the same
    for the block gate. Lines are whole needles, needles cut short (near misses), non-ASCII text and noise."""
    cat = load_catalogue()
    needles = [n for n, _ in cat._by_needle]
    rng = random.Random(5)
    seen = 0
    for _ in range(800):
        parts = []
        for _ in range(rng.randrange(0, 6)):
            n = rng.choice(needles)
            parts.append(n if rng.random() < 0.5 else n[:rng.randrange(1, len(n) + 1)])
            parts.append(rng.choice([" ", "", "é→", "\n", "ERROR ", "x"]))
        text = "".join(parts)
        got = {}
        for flag in ("1", "0"):
            monkeypatch.setenv(native.ENV, flag)
            got[flag] = ([s.id for s in cat.match(text)], cat.may_match(text))
        assert got["1"] == got["0"], text
        seen += bool(got["0"][0])
    assert seen > 100  # the lines did show signatures


def test_an_empty_catalogue_matches_nothing() -> None:
    from orchestrator.logparse.signatures import Catalogue

    empty = Catalogue(())
    assert empty.match("CUDA out of memory") == () and not empty.may_match("CUDA out of memory")
