"""A terminal's copy whose rows were padded with blanks to its width, with line breaks lost, split again.

Copied from some terminals (a remote desktop's console, some web terminals), a line shorter than the window
keeps the blanks that fill its row, and the break after it may be lost: the next line then starts exactly at
the window's width, after a run of blanks (``  File ".../server.py", line 217, in run_rpc_server``, blanks to
column 180, ``    server = AsyncEngineRPCServer(...)``).  A traceback's lines then read as one frame line, and
its exception line is lost inside another.  ``padded_width`` recognises the shape on a sample: lines where
a run of blanks reaches one column, the same on several lines, and a traceback's or a record's line starts
after it.  ``Repadder`` breaks a line at each multiple of that width where two blanks stand before it (a
row that wrapped mid-text has none there), the blank before the column made the line break (the byte count
stays the file's), and keeps where it did so, for line numbers of the file (``remap``).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

from orchestrator.logparse.resplit import Resplitter

#: Widths taken for a terminal's, and the lines that must show the same one.
_WIDTHS = range(60, 1001)
_MIN_LINES = 3
_BLANKS = re.compile(rb"  +")
#: What starts a line after the padding: a frame line (its indentation among the blanks), a traceback's header,
#: an exception line, a process prefix or a vLLM record.
_STARTS = re.compile(rb'File "|Traceback \(most recent call last\)|[A-Za-z_][\w.]*(?:Error|Exception)\b'
                     rb"|\([\w.\-:]+(?: \w+)? pid=\d+\) |(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d ")
#: A run of blanks that only a padded row (or deep indentation) has: lines without one are not looked at.  Most
#: rows of a terminal are much shorter than it, so a paste of padded rows has many.
_PAD = b" " * 16


def padded_width(sample: bytes) -> int | None:
    """The width the sample's rows were padded to, when lines of it hold rows joined after padding; else None."""
    if sample.count(_PAD) < _MIN_LINES:
        return None
    votes: Counter[int] = Counter()
    at = sample.find(_PAD)
    while at >= 0:
        end = sample.find(b"\n", at)
        end = len(sample) if end < 0 else end
        line = sample[sample.rfind(b"\n", 0, at) + 1:end]
        at = sample.find(_PAD, end)
        if len(line) > _WIDTHS.start and (widths := _widths(line)):  # (most lines: none, and no call to update)
            votes.update(widths)
    if not votes:
        return None
    # Lines whose padding is longer allow narrower widths too: the widest that all allow is the terminal's.
    width, n = max(votes.items(), key=lambda kv: (kv[1], kv[0]))
    return width if n >= _MIN_LINES else None


def _widths(line: bytes) -> set[int]:
    """The widths ``line`` may hold a padded row of: after a run of blanks, a line starts."""
    widths: set[int] = set()
    for m in _BLANKS.finditer(line, _WIDTHS.start - 2):
        start, end = m.span()
        if end < len(line) and _STARTS.match(line, end) is not None:
            # The row before ends in two blanks or more; the next one starts where its text does, less its
            # own indentation (a frame line's two blanks).
            last = end - 2 if line.startswith(b'File "', end) else end
            widths.update(range(max(start + 2, _WIDTHS.start), min(last, _WIDTHS.stop - 1) + 1))
    return widths


class Repadder(Resplitter):
    """Breaks lines at multiples of ``width`` where blanks padded a row, chunk by chunk."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self._width = width

    def _pieces(self, line: bytes) -> list[bytes]:
        w = self._width
        if len(line) <= w:
            return [line]
        cuts = [at for at in range(w, len(line), w) if line[at - 2:at] == b"  " and line[at:].strip()]
        if not cuts:
            return [line]
        return [line[a:b - 1] + b"\n" for a, b in pairwise([0, *cuts])] + [line[cuts[-1]:]]
