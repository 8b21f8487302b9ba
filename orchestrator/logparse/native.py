"""Multi-literal search in native code: every needle of a set found in one pass (Hyperscan), when installed.

CPython has no multi-pattern search, so the pure funnel (``funnel.py``) pays a pass over the bytes per needle
group; with 43 needles live that bounds a parse near 70 MB/s.  Hyperscan matches a literal set in one SIMD
pass at over 1 GB/s, and reports each match to a callback, which costs about as much as a Python call: it
pays off because only the needles relevant in the parser's state are searched (matches are few).

The ``hyperscan`` wheel exists for Linux x86-64 and macOS (a dependency there); elsewhere (Linux on ARM), or
with ``EORCH_NATIVE_SCAN=0``, the pure funnel is used and the results are the same (tested side by side).  A
compiled set is shared, but Hyperscan's scratch space is not: each thread gets its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any


def _load() -> Any:
    try:
        import hyperscan
    except ImportError:  # no wheel for this platform: the pure funnel is used
        return None
    return hyperscan


_hs: Any = _load()

#: Set to ``0`` to use the pure funnel even where Hyperscan is installed.
ENV = "EORCH_NATIVE_SCAN"


def available() -> bool:
    return _hs is not None and os.environ.get(ENV, "1") != "0"


class LiteralSet:
    """A compiled set of byte literals; ``find`` gives where any of them starts."""

    def __init__(self, needles: tuple[bytes, ...]) -> None:
        assert _hs is not None
        self._lens = [len(n) for n in needles]
        self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        self._db.compile(expressions=list(needles), ids=list(range(len(needles))), flags=0, literal=True)
        self._local = threading.local()

    def find(self, buf: bytes, start: int, end: int) -> list[int]:
        """Sorted positions in ``buf[start:end]`` where some needle starts (overlapping matches included)."""
        if end <= start:
            return []
        ends: list[tuple[int, int]] = []
        add = ends.append

        def on_match(i: int, _from: int, to: int, _flags: int, _ctx: Any) -> None:
            add((i, to))

        self._db.scan(memoryview(buf)[start:end], match_event_handler=on_match, scratch=self._scratch())
        lens = self._lens
        hits = [start + to - lens[i] for i, to in ends]
        if len(set(lens)) > 1:  # matches come in order of their end; starts differ by the needles' lengths
            hits.sort()
        return hits

    def occurs_in(self, buf: bytes) -> bool:
        """Whether some needle occurs in ``buf`` (the scan stops at the first match)."""
        found: list[bool] = []

        def on_match(_i: int, _from: int, _to: int, _flags: int, _ctx: Any) -> bool:
            found.append(True)
            return True  # stop scanning

        try:
            self._db.scan(buf, match_event_handler=on_match, scratch=self._scratch())
        except _hs.ScanTerminated:  # what stopping at the first match looks like
            return True
        return bool(found)

    def ids_in(self, buf: bytes) -> set[int]:
        """The ids (positions in the compiled tuple) of the needles that occur in ``buf``."""
        ids: set[int] = set()
        add = ids.add

        def on_match(i: int, _from: int, _to: int, _flags: int, _ctx: Any) -> None:
            add(i)

        self._db.scan(buf, match_event_handler=on_match, scratch=self._scratch())
        return ids

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            assert _hs is not None
            scratch = self._local.scratch = _hs.Scratch(self._db)
        return scratch


@lru_cache(maxsize=128)
def literal_set(needles: tuple[bytes, ...]) -> LiteralSet:
    return LiteralSet(needles)


@lru_cache(maxsize=128)
def _compiled_set(needles: tuple[bytes, ...]) -> LiteralSet | None:
    """The compiled set of ``needles`` (in any order, repeats allowed), kept by the tuple asked with: the parser
    asks with the same few tuples for every window it scans, and sorting them each time cost more than the
    lookup.  The caller checks that native search is available (an environment setting, not kept here)."""
    return literal_set(tuple(sorted(set(needles)))) if needles else None


def occurs(needles: tuple[bytes, ...]) -> Callable[[bytes], bool] | None:
    """``LiteralSet.occurs_in`` of ``needles`` when native search is available, else None."""
    ls = _compiled_set(needles) if available() else None
    return None if ls is None else ls.occurs_in


def finder(needles: tuple[bytes, ...]) -> Callable[[bytes, int, int], list[int]] | None:
    """``LiteralSet.find`` of ``needles`` when native search is available, else None."""
    ls = _compiled_set(needles) if available() else None
    return None if ls is None else ls.find
