"""A log copied newest line first, read oldest first again.

Some log viewers list the newest line at the top: Grafana's log panel and Explore over Loki (their default),
RunPod's and other platforms' web consoles.  Copied from there, a traceback reads upside down (its exception
line above its frames, ``Traceback (most recent call last):`` last) and a process's exit comes before the
error that caused it.  ``newest_first`` recognises the order on a sample by the lines' timestamps (vLLM's
record headers, ISO stamps, glog's and syslog's): they go back in time from one line to the next far more
often than forward.  ``Reverser`` holds the lines and gives them back in the other order at the end, and
keeps the count, so that line numbers in the verdict are the file's (``remap``).  A log bigger than
``HOLD_CAP`` is not held (a copy from a viewer is small): it is read as it is, and the note says so.
"""

from __future__ import annotations

import re

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

#: Steps back in time needed, and how many times more of them than steps forward.
_MIN_BACK = 3
_BACK_RATIO = 3
#: Lines of the sample looked at, and pairs of stamps compared that are enough to tell the order.
_SAMPLE_LINES = 500
_COMPARED = 300
_CLEARLY_FORWARD = 10
#: Bytes of a line's start where its timestamp is looked for (a collector's prefix may come first).
_STAMP_AT = 160
#: Most bytes held to be reversed.
HOLD_CAP = 64 * 1024 * 1024

_MONTHS = b"JanFebMarAprMayJunJulAugSepOctNovDec"
#: Timestamps by kind, in one pattern (the first stamp near a line's start wins); only stamps of one kind are
#: compared with each other.
_KINDS = [
    rb"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?",  # ISO, Python logging's
    rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?",  # vLLM's records
    rb"\b[IWEF](\d\d?)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?",  # glog's (PyTorch's records; c10's month unpadded)
    rb"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?",  # syslog's
]
_STAMP = re.compile(b"|".join(b"(?P<k%d>%s)" % (i, kind) for i, kind in enumerate(_KINDS)))
_SYSLOG = len(_KINDS) - 1
_GROUPS = [re.compile(kind).groups for kind in _KINDS]
#: A time of day, looked for first (one simple pattern), and the most a stamp starts before it.
_HMS = re.compile(rb"\d\d:\d\d:\d\d")
_BEFORE_HMS = 24


def _stamp(line: bytes) -> tuple[int, tuple[int, ...]] | None:
    """The kind and value of the first timestamp near the line's start."""
    hms = _HMS.search(line, 0, _STAMP_AT)
    if hms is None:
        return None  # (every stamp has its time of day: most lines without a stamp are passed over here)
    m = _STAMP.search(line, max(0, hms.start() - _BEFORE_HMS), _STAMP_AT)
    if m is None:
        return None
    kind = next(i for i in range(len(_KINDS)) if m.group(f"k{i}") is not None)
    first = 1 + sum(1 + _GROUPS[i] for i in range(kind))  # the kind's own groups, after those of the kinds before
    parts = [g or b"0" for g in m.groups()[first:first + _GROUPS[kind]]]
    if kind == _SYSLOG:
        parts[0] = b"%d" % (_MONTHS.index(parts[0]) // 3 + 1)
    fraction = parts[-1].ljust(9, b"0")[:9]
    return kind, (*(int(p) for p in parts[:-1]), int(fraction))


def newest_first(sample: bytes) -> bool:
    """Whether the sample's lines go back in time from top to bottom."""
    back = forward = compared = 0
    last: tuple[int, tuple[int, ...]] | None = None
    for line in sample.split(b"\n", _SAMPLE_LINES)[:-1]:  # the last may be cut
        stamp = _stamp(line)
        if stamp is None:
            continue
        if last is not None and last[0] == stamp[0]:
            back += stamp[1] < last[1]
            forward += stamp[1] > last[1]
            compared += 1
            if compared >= _COMPARED or (forward >= _CLEARLY_FORWARD and back < forward):
                break  # (enough to tell; most logs run forward, and tell it in their first lines)
        last = stamp
    return back >= _MIN_BACK and back >= _BACK_RATIO * forward


class Reverser(WholeLines):
    """Holds every line and gives them back last first when the stream ends (up to ``HOLD_CAP`` bytes: past it,
    what was held and the rest are given as they came)."""

    def __init__(self) -> None:
        super().__init__()
        self._held: list[bytes] = []
        self._size = 0
        self.given_up = False  # too big to hold: read in its own order
        self._lines_out = 0

    def _lines(self, block: bytes) -> bytes:
        if self.given_up:
            return block
        self._held.append(block)
        self._size += len(block)
        if self._size <= HOLD_CAP:
            return b""
        self.given_up = True
        held, self._held = b"".join(self._held), []
        return held

    def _last(self, rest: bytes) -> bytes:
        if self.given_up:
            return rest
        lines = (b"".join(self._held) + rest).split(b"\n")
        self._held = []
        if lines and not lines[-1]:
            lines.pop()  # the text ended with a line end, not with a line
        self._lines_out = len(lines)
        return b"".join(line + b"\n" for line in reversed(lines))

    def note(self) -> str:
        if self.given_up:
            return (f"its lines look newest first (a log viewer's order), but it is over {HOLD_CAP >> 20} MiB: "
                    "read in the order given")
        return "newest line first (a log viewer's order: Grafana/Loki, a web console): read oldest first"

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with the file's line numbers and size."""
        if self.given_up:
            return analysis.renumbered(lambda n: n, analysis.lines, self.read)
        total = self._lines_out
        return analysis.renumbered(lambda n: total - n + 1 if 0 < n <= total else n, total, self.read)
