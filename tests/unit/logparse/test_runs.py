"""Where a log of several tries is cut: ``runs.starts`` finds the lines ``RUN_START`` matches on, by literal
search (a regex alternation with no literal prefix scanned ~150 MB/s and halved the speed of a serving log)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.logparse.runs import RUN_START, starts

_PIECES = [
    b"vLLM API server version ", b"vLLM API server version", b"Initializing a LLM engine (v",
    b"Initializing an V1 LLM engine (v", b"Initializing an LLM engine (v0.6.3)", b"LLM engine (v",
    b"Initializing  a V1 LLM engine (v", b"Initializing an LLM engine (", b"Initializing a V1 LLM engine (v",
    b"INFO 02-21 21:43:13 [engine.py:12] ", b"\n", b"\r\n", b"x", b"Initializing", b" a ", b"V1 ",
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
