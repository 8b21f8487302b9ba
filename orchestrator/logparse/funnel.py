"""The scanner's funnel: literal needles that select the few lines worth decoding.

Python cannot afford to look at every line of a 100 MB log.  Every rule of the parser is guarded by one of
these needles, so a line holding none of them cannot change anything and is skipped unread.  Needles are
searched over large byte buffers with one compiled ``bytes`` regex per leading byte (``E(?:rror|RROR)``):
the regex engine then runs a fast literal search for that byte in C, one pass per group.  Needles whose
rule can no longer fire (phase markers once that phase is reached) drop out of the funnel; the serving and
running markers come back while an error line is pending, as possible signs of life.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from orchestrator.logparse import native
from orchestrator.logparse.phases import (
    ANSWERED_NEEDLES,
    CLEAN_NEEDLES,
    MARKERS,
    PROGRESS_NEEDLES,
    RESTART_NEEDLES,
    SHARD_NEEDLES,
    TQDM_MARK_RE,
    Phase,
)
from orchestrator.logparse.signatures import Catalogue
from orchestrator.logparse.tbforms import IPYTHON_FRAME_NEEDLES
from orchestrator.logparse.tbtext import HEADERS

#: Short needles that cover many rule needles: a rule needle containing one of these is found through it,
#: so the funnel makes one pass for the atom instead of one per rule needle.
ATOMS: tuple[str, ...] = (
    "Error", "ERROR", "Exception", "Engine core", "Traceback", "WorkerProc", "Worker proc",
    "No available", "NCCL", "Done.", "Data generation",
)
#: Lines worth reading whatever the state: errors, tracebacks and error-level records (c10's, in a distributed
#: process: ``[rank0]:[E623 13:46:28.176383770 compiler_depend.ts:429] ...``).
ERROR_NEEDLES: tuple[str, ...] = ("Error", "ERROR", "Traceback", "]:[E")
FRAME_NEEDLE = b'File "'
#: A process's word that one request failed, after the exception it caught (``weighing.py``).
FAILED_FOR_REQUEST_NEEDLE = "ailed for request "


@dataclass(frozen=True)
class Needle:
    text: bytes
    until_phase: Phase | None = None  # relevant while the log's phase is before this one
    until_clean: bool = False  # relevant until a clean shutdown has been seen
    while_pending: bool = False  # relevant whatever the phase while an error line (or a served traceback) waits

    def relevant(self, phase: Phase, clean: bool, pending: bool = False) -> bool:
        if pending and self.while_pending:
            return True
        if self.until_clean and clean:
            return False
        return self.until_phase is None or phase.rank < self.until_phase.rank


class Funnel:
    """Needles with their relevance, and the compiled scanners for each relevant set.

    Progress frames are found by a separate pattern (``PROGRESS_RE``): a line holding only progress is
    handled by the cheap progress rule and never decoded.
    """

    def __init__(self, needles: Iterable[Needle], atoms: Iterable[str] = ATOMS) -> None:
        merged: dict[bytes, Needle] = {}
        atom_bytes = [a.encode() for a in atoms]
        for n in needles:
            cover = next((a for a in atom_bytes if a in n.text), None)
            if cover is not None:
                n = Needle(cover, n.until_phase, n.until_clean, n.while_pending)
            old = merged.get(n.text)
            if old is None:
                merged[n.text] = n
            elif old != n:  # wanted by two rules: keep it while either wants it
                merged[n.text] = Needle(n.text, _later(old.until_phase, n.until_phase),
                                        old.until_clean and n.until_clean, old.while_pending or n.while_pending)
        self._needles = tuple(merged.values())

    @property
    def needles(self) -> tuple[Needle, ...]:
        return self._needles

    def relevant(self, phase: Phase, clean: bool, pending: bool = False) -> tuple[bytes, ...]:
        return _relevant(self, phase, clean, pending)

    @staticmethod
    def is_candidate(raw: bytes, relevant: tuple[bytes, ...]) -> bool:
        """True when ``raw`` holds a relevant needle (progress aside)."""
        return _candidate(relevant)(raw)

    @staticmethod
    def scan(buf: bytes, start: int, end: int, relevant: tuple[bytes, ...], native_ok: bool | None = None) -> list[int]:
        """Sorted positions in ``buf[start:end]`` where some relevant needle starts (``native_ok``: as
        ``native.finder`` takes it).

        Each needle is anchored on its rarest byte, as measured on a sample of the region.  Anchors rare
        enough are walked with ``bytes.find`` of one byte (a ``memchr``, ~10x faster than a regex pass) and
        checked with ``startswith``; the other needles get one compiled regex pass per leading byte.  With
        native search (``native.py``) all needles are found in one pass instead.
        """
        if not relevant:
            return []
        native_find = native.finder(relevant, native_ok)
        if native_find is not None:
            return native_find(buf, start, end)
        hits: list[int] = []
        length = end - start
        regex_needles: list[bytes] = list(relevant)
        if length >= _MIN_PLANNED:
            freq = _sample_freq(buf, start, end, _needle_bytes(relevant))
            regex_needles = []
            groups: dict[int, list[tuple[int, bytes]]] = {}
            for needle in relevant:
                k = min(range(len(needle)), key=lambda i: (freq[needle[i]], i))
                groups.setdefault(needle[k], []).append((k, needle))
            scale = length / (4 * (min(_SAMPLE, length // 8) // 4))
            for byte, members in groups.items():
                if freq[byte] * scale * _STEP_BYTES < length:
                    _walk(buf, start, end, byte, members, hits)
                else:
                    regex_needles += [n for _, n in members]
        for rx in _compiled(tuple(regex_needles)):
            hits.extend([m.start() for m in rx.finditer(buf, start, end)])
        hits.sort()
        return hits

    @staticmethod
    def scan_progress(buf: bytes, start: int, end: int) -> list[int]:
        """Positions of possible progress frames (``<`` + digit or ``?``) in ``buf[start:end]``."""
        length = end - start
        if length >= _MIN_PLANNED:
            freq = _sample_freq(buf, start, end, frozenset(b"<"))
            if freq[0x3C] * (length / (4 * (min(_SAMPLE, length // 8) // 4))) * _MARK_STEP_BYTES < length:
                out: list[int] = []
                find = buf.find
                i = find(b"<", start, end)
                while i >= 0:
                    if i + 1 < end and buf[i + 1] in _FRAME_NEXT:
                        out.append(i)
                    i = find(b"<", i + 1, end)
                return out
        return [m.start() for m in TQDM_MARK_RE.finditer(buf, start, end)]

    def __hash__(self) -> int:
        return id(self)


#: Regions smaller than this are scanned with regexes only.
_MIN_PLANNED = 256 * 1024
#: Bytes sampled (in 4 windows) to measure byte frequencies.
_SAMPLE = 64 * 1024
#: One Python step of a memchr walk costs about as much as a regex pass over this many bytes.
_STEP_BYTES = 1500
#: The same for the walk over ``<`` of ``scan_progress`` (one find and a byte check a step): cheaper than a regex
#: pass until marks come closer than this (an extraction's bar, a frame every ~1 KB: the walk takes 0.4x the time).
_MARK_STEP_BYTES = 300
_FRAME_NEXT = frozenset(b"0123456789?")


def _walk(buf: bytes, start: int, end: int, byte: int, members: list[tuple[int, bytes]], hits: list[int]) -> None:
    """Append where ``members`` (anchor offset, needle) occur, walking the anchor byte with memchr."""
    find, startswith = buf.find, buf.startswith
    anchor = bytes([byte])
    i = find(anchor, start, end)
    if len(members) == 1:
        k, needle = members[0]
        while i >= 0:
            j = i - k
            if j >= start and startswith(needle, j, end):
                hits.append(j)
            i = find(anchor, i + 1, end)
        return
    while i >= 0:
        for k, needle in members:
            j = i - k
            if j >= start and startswith(needle, j, end):
                hits.append(j)
                break
        i = find(anchor, i + 1, end)


@lru_cache(maxsize=64)
def _needle_bytes(relevant: tuple[bytes, ...]) -> frozenset[int]:
    return frozenset(b for n in relevant for b in n)


def _sample_freq(buf: bytes, start: int, end: int, wanted: frozenset[int]) -> dict[int, int]:
    """Count of each wanted byte in 4 windows spread over the region (``_SAMPLE`` bytes in all)."""
    step = (end - start) // 4
    win = min(_SAMPLE, (end - start) // 8) // 4
    sample = b"".join(buf[start + q * step:start + q * step + win] for q in range(4))
    return {b: sample.count(bytes([b])) for b in wanted}


def _later(a: Phase | None, b: Phase | None) -> Phase | None:
    if a is None or b is None:
        return None
    return a if a.rank >= b.rank else b


@lru_cache(maxsize=64)
def _relevant(funnel: Funnel, phase: Phase, clean: bool, pending: bool) -> tuple[bytes, ...]:
    return tuple(n.text for n in funnel.needles if n.relevant(phase, clean, pending))


@lru_cache(maxsize=64)
def _candidate(relevant: tuple[bytes, ...]) -> Callable[[bytes], bool]:
    """A test of whether a line holds one of ``relevant``: one native scan, else one regex alternation."""
    occurs = native.occurs(relevant)
    if occurs is not None:
        return occurs
    if not relevant:
        return lambda raw: False
    rx = re.compile(b"|".join(re.escape(n) for n in sorted(set(relevant), key=len, reverse=True)))
    return lambda raw: rx.search(raw) is not None


@lru_cache(maxsize=64)
def _compiled(relevant: tuple[bytes, ...]) -> tuple[re.Pattern[bytes], ...]:
    groups: dict[int, list[bytes]] = {}
    for text in relevant:
        groups.setdefault(text[0], []).append(text)
    out: list[re.Pattern[bytes]] = []
    for first, texts in groups.items():
        if any(len(t) == 1 for t in texts):
            out.append(re.compile(re.escape(bytes([first]))))
        elif len(texts) == 1:
            out.append(re.compile(re.escape(texts[0])))
        else:
            rests = sorted({re.escape(t[1:]) for t in texts}, key=len, reverse=True)
            out.append(re.compile(re.escape(bytes([first])) + b"(?:" + b"|".join(rests) + b")"))
    return tuple(out)


@lru_cache(maxsize=8)
def build_funnel(catalogue: Catalogue) -> Funnel:
    """Every needle the parser's rules are guarded by (progress aside); one funnel per catalogue."""
    needles: list[Needle] = [Needle(t.encode()) for t in ERROR_NEEDLES]
    needles += [Needle(h.split(" ")[0].encode()) for h in HEADERS if not h.startswith("Traceback")]
    needles += [Needle(t.encode()) for t in PROGRESS_NEEDLES]
    # A frame line outside an open traceback: a paste's tail with its header cut off (``_frame_above``); looked
    # for until the job serves (a serving log's tracebacks have their headers, and one per request makes frame
    # lines the bulk of it: each would cost a match).
    needles.append(Needle(FRAME_NEEDLE, until_phase=Phase.SERVING))
    needles += [Needle(t.encode(), until_phase=Phase.SERVING) for t in IPYTHON_FRAME_NEEDLES]  # (a notebook's)
    needles += [Needle(t.encode(), until_clean=True) for t in CLEAN_NEEDLES]
    # Always relevant (rare lines): a fresh start after a clean stop, a later run appended to the same log.
    needles += [Needle(t.encode()) for t in RESTART_NEEDLES]
    needles += [Needle(t.encode(), until_phase=Phase.SERVING) for t in SHARD_NEEDLES]
    for marker in MARKERS:
        # While an error line is pending, the serving/running markers are read again as signs of life.
        alive = marker.phase.rank >= Phase.SERVING.rank
        needles += [Needle(t.encode(), until_phase=marker.phase, while_pending=alive) for t in marker.needles]
    # Requests answered (a health check too): read only while an error line or a traceback logged while serving
    # (``Evidence.served``) waits for a sign of life.
    needles += [Needle(t.encode(), until_phase=Phase.STARTING, while_pending=True) for t in ANSWERED_NEEDLES]
    needles.append(Needle(FAILED_FOR_REQUEST_NEEDLE.encode()))
    needles += [Needle(t.encode()) for t in catalogue.funnel_needles()]
    return Funnel(needles)


@lru_cache(maxsize=64)
def needles_added(relevant: tuple[bytes, ...], wanted: tuple[bytes, ...]) -> tuple[bytes, ...] | None:
    """The needles of ``wanted`` not in ``relevant``, or None when some of ``relevant`` dropped out."""
    if not all(n in wanted for n in relevant):
        return None
    return tuple(n for n in wanted if n not in relevant)
