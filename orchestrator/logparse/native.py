"""Multi-literal search in native code: every needle of a set found in one pass (Hyperscan), when installed.

CPython has no multi-pattern search, so the pure funnel (``funnel.py``) pays a pass over the bytes per needle
group; with 43 needles live that bounds a parse near 70 MB/s.  Hyperscan matches a literal set in one SIMD
pass at over 1 GB/s, and reports each match to a callback, which costs about as much as a Python call: it
pays off because only the needles relevant in the parser's state are searched (matches are few).

The ``hyperscan`` wheel exists for Linux x86-64 and macOS (a dependency there); elsewhere (Linux on ARM), or
with ``EORCH_NATIVE_SCAN=0``, the pure funnel is used and the results are the same (tested side by side).  A
compiled set is shared, but Hyperscan's scratch space is not: each thread gets its own.

Compiling the ~20 sets a parse asks for costs ~17 ms, a third of a small log's parse.  A process that analyses
one log and exits (``eorch log analyze``) can keep them in a directory (``keep_compiled_in``): a kept set loads
in microseconds.  A kept file that does not load (another Hyperscan, another CPU, a cut write) is compiled again
and replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
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


_kept_in: Path | None = None
_SUM = 16  # bytes of the SHA-256 of a kept set that head its file
#: Kept files at most: each release of eorch (or of Hyperscan) asks for other sets, so a set of a catalogue or
#: a Hyperscan no longer in use would stay forever; the oldest written go first (a set still in use is only
#: compiled again).
_KEEP = 128


def keep_compiled_in(directory: Path | None) -> None:
    """Keep compiled sets as files in ``directory`` (created when needed), and load them from there; None: compile
    each set in every process (the default)."""
    global _kept_in
    _kept_in = directory


def _database(needles: tuple[bytes, ...]) -> Any:
    assert _hs is not None
    kept = _kept_in
    path = None
    if kept is not None:
        key = hashlib.sha256(repr((_hs.__version__, platform.machine(), needles)).encode())
        path = kept / f"{key.hexdigest()[:32]}.hsdb"
        try:
            kept_bytes = path.read_bytes()
        except OSError:  # not kept yet
            kept_bytes = b""
        body = kept_bytes[_SUM:]
        if body and kept_bytes[:_SUM] == hashlib.sha256(body).digest()[:_SUM]:  # (Hyperscan's own check misses some)
            try:
                return _hs.loadb(body, mode=_hs.HS_MODE_BLOCK)
            except _hs.error:  # compiled by another Hyperscan or for another CPU: compiled again below
                pass
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=list(needles), ids=list(range(len(needles))), flags=0, literal=True)
    if path is not None:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            body = _hs.dumpb(db)
            tmp.write_bytes(hashlib.sha256(body).digest()[:_SUM] + body)
            os.replace(tmp, path)  # readers see the whole file or none
        except OSError:  # a read-only home: compiling each time is only slower
            with contextlib.suppress(OSError):
                tmp.unlink()
        else:
            _prune(path.parent)
    return db


def _prune(directory: Path) -> None:
    """Remove the oldest kept sets beyond ``_KEEP`` (another process may be removing them too)."""
    aged: list[tuple[float, Path]] = []
    for kept in directory.glob("*.hsdb"):
        with contextlib.suppress(OSError):
            aged.append((kept.stat().st_mtime, kept))
    aged.sort()
    for _, kept in aged[:max(0, len(aged) - _KEEP)]:
        with contextlib.suppress(OSError):
            kept.unlink()


class LiteralSet:
    """A compiled set of byte literals; ``find`` gives where any of them starts."""

    def __init__(self, needles: tuple[bytes, ...]) -> None:
        assert _hs is not None
        self._lens = [len(n) for n in needles]
        self._mixed = len(set(self._lens)) > 1  # matches come in order of their end: starts then need sorting
        self._db = _database(needles)
        self._local = threading.local()

    def find(self, buf: bytes, start: int, end: int) -> list[int]:
        """Sorted positions in ``buf[start:end]`` where some needle starts (overlapping matches included)."""
        if end <= start:
            return []
        hits: list[int] = []
        add, lens = hits.append, self._lens

        def on_match(i: int, _from: int, to: int, _flags: int, _ctx: Any) -> None:
            add(start + to - lens[i])  # (the callback is most of a find's cost where matches are many: no more)

        self._db.scan(memoryview(buf)[start:end], match_event_handler=on_match, scratch=self._scratch())
        if self._mixed:
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


def finder(needles: tuple[bytes, ...], native_ok: bool | None = None) -> Callable[[bytes, int, int], list[int]] | None:
    """``LiteralSet.find`` of ``needles`` when native search is available (``native_ok``: the caller asked
    ``available()`` already; reading the environment costs a microsecond a call), else None."""
    ls = _compiled_set(needles) if (available() if native_ok is None else native_ok) else None
    return None if ls is None else ls.find
