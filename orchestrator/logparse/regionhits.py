"""The funnel's hits over one region, found once per scanning unit and reused by every window of it.

The parser scans a region in windows, and a state change (a traceback closing, an error line pending) makes
it rescan the rest of a window with another set of relevant needles.  Scanning bytes again for that made a
log with a crash every ~25 KB cost twice its size in regex passes.  Here the region's needles are planned
once, whatever the state, into units as ``Funnel.scan`` plans them (needles anchored on a byte rare in the
region's sample share one ``memchr`` walk; the others share one regex per leading byte).  A unit's hits are
found ahead of the windows the first time one of its needles is relevant (extended by as much as it already
covers, so a unit that drops out soon is not scanned to the region's end), and a window's hits are then a
slice of those lists (``bisect``), less the hits of needles not relevant now.  With native search
(``native.py``) a unit is the needles relevant in the same states, found in one pass.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from orchestrator.logparse import funnel as fn
from orchestrator.logparse import native


@dataclass
class _Unit:
    members: list[tuple[int, bytes]]  # (anchor offset, needle); anchor -1: a regex unit
    anchor: int | None  # the walked byte, None for a regex or native unit
    texts: frozenset[bytes] = frozenset()
    lo: int = -1
    hi: int = -1
    hits: list[int] = field(default_factory=list)
    literals: native.LiteralSet | None = None  # a native unit's compiled needles


@lru_cache(maxsize=8)
def _native_plan(funnel: fn.Funnel) -> tuple[tuple[list[tuple[int, bytes]], frozenset[bytes], native.LiteralSet], ...]:
    """Native units of ``funnel``: the needles relevant in the same states, compiled as one set each."""
    units: dict[tuple[object, ...], list[tuple[int, bytes]]] = {}
    for n in funnel.needles:
        units.setdefault((n.until_phase, n.until_clean, n.while_pending), []).append((-1, n.text))
    plan = []
    for members in units.values():
        texts = frozenset(t for _, t in members)
        plan.append((members, texts, native.literal_set(tuple(sorted(texts)))))
    return tuple(plan)


class RegionHits:
    """Hit lists of ``buf[start:end]`` per unit (and of progress marks), filled lazily ahead of the windows."""

    def __init__(self, funnel: fn.Funnel, buf: bytes, start: int, end: int) -> None:
        self._buf, self._end = buf, end
        self._progress: tuple[int, list[int]] | None = None
        self._native = native.available()
        if self._native:  # the plan depends on the funnel alone: made once, each region gets fresh hit lists
            self._units = [_Unit(members, None, texts, literals=literals)
                           for members, texts, literals in _native_plan(funnel)]
            return
        needles = [n.text for n in funnel.needles]
        # Needles relevant in different states never share a regex unit: it is relevant as a whole (no hits of
        # needles not wanted now to scan for and drop).  A walk is shared by all needles of its byte (one
        # memchr pass; its hits are few, checked needles, and those not wanted now are dropped).
        kind = {n.text: (n.until_phase, n.until_clean, n.while_pending) for n in funnel.needles}
        units: dict[tuple[object, ...], _Unit] = {}
        length = end - start
        freq: dict[int, int] | None = None
        if length >= fn._MIN_PLANNED:
            freq = fn._sample_freq(buf, start, end, fn._needle_bytes(tuple(needles)))
            scale = length / (4 * (min(fn._SAMPLE, length // 8) // 4))
        for needle in needles:
            if freq is not None:
                k = min(range(len(needle)), key=lambda i: (freq[needle[i]], i))
                if freq[needle[k]] * scale * fn._STEP_BYTES < length:
                    units.setdefault(("w", needle[k]), _Unit([], needle[k])).members.append((k, needle))
                    continue
            units.setdefault(("r", needle[0], kind[needle]), _Unit([], None)).members.append((-1, needle))
        self._units = list(units.values())
        for u in self._units:
            u.texts = frozenset(t for _, t in u.members)

    def _hits(self, u: _Unit, start: int, end: int) -> list[int]:
        if u.lo < 0 or u.lo > start:
            u.lo = u.hi = start
            u.hits = []
        if u.hi < end:
            to = max(end, u.hi + (u.hi - u.lo))
            cut = self._buf.find(b"\n", to, self._end)  # at a line start: no needle spans two scans
            to = self._end if cut < 0 else cut + 1
            if u.anchor is not None:
                fn._walk(self._buf, u.hi, to, u.anchor, u.members, u.hits)
            elif u.literals is not None:
                u.hits.extend(u.literals.find(self._buf, u.hi, to))
            else:
                for rx in fn._compiled(tuple(t for _, t in u.members)):
                    u.hits.extend([m.start() for m in rx.finditer(self._buf, u.hi, to)])
            u.hi = to
        return u.hits

    def scan(self, start: int, end: int, relevant: tuple[bytes, ...]) -> list[int]:
        """Sorted positions in ``buf[start:end]`` where some relevant needle starts (``Funnel.scan``)."""
        wanted = set(relevant)
        startswith = self._buf.startswith
        hits: list[int] = []
        parts = 0
        for u in self._units:
            members = [t for t in u.texts if t in wanted]
            if not members:
                continue
            found = self._hits(u, start, end)
            part = found[bisect_left(found, start):bisect_left(found, end)]
            if len(members) < len(u.texts):  # some needles of the unit are not relevant now: drop their hits
                part = [p for p in part if any(startswith(t, p, end) for t in members)]
            if part:
                hits.extend(part)
                parts += 1
        if parts > 1:
            hits.sort()
        return hits

    def scan_progress(self, start: int, end: int) -> list[int]:
        """``Funnel.scan_progress(buf, start, end)``, from a list found once over the rest of the region."""
        if self._progress is None or self._progress[0] > start:
            self._progress = (start, fn.Funnel.scan_progress(self._buf, start, self._end))
        found = self._progress[1]
        return found[bisect_left(found, start):bisect_left(found, end)]
