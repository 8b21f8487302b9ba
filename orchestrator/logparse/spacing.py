"""A log whose every line is followed by an empty one, or by a collector's line of its own, read as the log it was.

Some web pages, chat clients and editors put an empty line after each line of a pasted log (a CRLF file
read as if ``\\r`` and ``\\n`` were each a line end).  The empty lines then break up what belongs together: a
raw traceback, the lines of a multi-line exception message.  (``tr '\\r' '\\n'``, run to make tqdm's bars
readable, leaves empty lines only inside vLLM's multi-line records: not this shape, and read as it is.)
``double_spaced`` recognises the shape on a sample (nearly every line followed by exactly one empty line);
``Undoubler`` drops the empty line after each line and keeps where the shape was broken, so that line
numbers in the verdict are still the file's (``remap``).

A log viewer's copy may do the same with a line of its own instead of the empty one: the entry's time and
where it came from (``2026-09-06 15:46:07  job-worker-0``), each on a line between the log's lines.
``stamp_lines`` recognises that shape (the same source on every such line, nearly every one between two
lines of the log); ``Undoubler`` then drops those lines as it drops the empty ones.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import pairwise

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

#: Lines with text needed in the sample (a pasted fragment may have three), and the share of them that must be
#: followed by one empty line.
_MIN_LINES = 3
_MIN_SHARE = 0.9


def double_spaced(sample: bytes) -> bool:
    """Whether nearly every line of ``sample`` with text is followed by exactly one empty line (the last one's by
    the end of the sample), or by an odd number of them: the log's own empty lines are doubled too."""
    lines = sample.split(b"\n")[:-1]  # the last may be cut
    n = len(lines)
    texts = followed = 0
    for i, line in enumerate(lines):
        if line.strip():
            texts += 1
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            followed += (j - i - 1) % 2 == 1
    return texts >= _MIN_LINES and followed >= _MIN_SHARE * texts


#: A line that holds only an entry's time and its source (a pod, a host, a job), as log viewers put it.
_STAMP_TIME = rb"^[ \t]*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]+"
_STAMP_END = rb"[ \t]*\r?$"
_STAMP_LINE = re.compile(_STAMP_TIME + rb"(?P<src>[\w.\-/:]+)" + _STAMP_END)


def stamp_lines(sample: bytes) -> re.Pattern[bytes] | None:
    """The pattern of a collector's time-and-source lines when they stand between nearly all lines of
    ``sample`` (one source on all of them), else None."""
    lines = [line for line in sample.split(b"\n")[:-1] if line.strip()]
    stamps = [i for i, line in enumerate(lines) if _STAMP_LINE.match(line)]
    if len(stamps) < _MIN_LINES or len(stamps) < 0.4 * len(lines):
        return None
    sources = {m.group("src") for m in (_STAMP_LINE.match(lines[i]) for i in stamps) if m is not None}
    between = sum(1 for a, b in pairwise(stamps) if b - a == 2)
    if len(sources) != 1 or between < _MIN_SHARE * (len(stamps) - 1):
        return None
    return re.compile(_STAMP_TIME + re.escape(sources.pop()) + _STAMP_END)


class Undoubler(WholeLines):
    """Drops the empty line (or, given ``separator``, the line it matches) after each line with text, chunk by
    chunk."""

    def __init__(self, separator: re.Pattern[bytes] | None = None) -> None:
        super().__init__()
        self._separator = separator
        self._after_kept = False  # a line was given out just before: an empty line now is dropped
        self._kept = 0  # lines given out
        # Given-out lines (1-based) that no dropped empty line follows, as runs of consecutive ones (a stretch
        # of the log that is not double-spaced is one run): where each starts and ends, and how many before it.
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._before: list[int] = []
        self.dropped = 0

    def _last(self, rest: bytes) -> bytes:
        if rest and self._after_kept:
            self._irregular(self._kept)
        return rest

    def _lines(self, block: bytes) -> bytes:
        out: list[bytes] = []
        for text in block[:-1].split(b"\n") if block else ():  # lines end in "\n" only, as the parser counts them (not a lone "\r")
            line = text + b"\n"
            empty = not text.strip() or (self._separator is not None and self._separator.match(text) is not None)
            if empty and self._after_kept:
                self._after_kept = False
                self.dropped += 1
                continue
            if self._after_kept:  # a line right after a kept one: nothing dropped between
                self._irregular(self._kept)
            out.append(line)
            self._kept += 1
            # The log's own empty lines were doubled too: the one after a kept empty line goes as well.
            self._after_kept = True
        return b"".join(out)

    def _irregular(self, line_no: int) -> None:
        if self._ends and self._ends[-1] == line_no:
            self._ends[-1] += 1
            return
        self._before.append(self._before[-1] + self._ends[-1] - self._starts[-1] if self._ends else 0)
        self._starts.append(line_no)
        self._ends.append(line_no + 1)

    def _irregular_before(self, line_no: int) -> int:
        i = bisect_right(self._starts, line_no - 1) - 1
        return 0 if i < 0 else self._before[i] + min(line_no, self._ends[i]) - self._starts[i]

    def file_line(self, line_no: int) -> int:
        """The file's line number (1-based) of given-out line ``line_no``: one empty line was dropped after
        each line before it, except the irregular ones."""
        return 2 * line_no - 1 - self._irregular_before(line_no)

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with line numbers and sizes of the file, not of the text read."""
        return analysis.renumbered(self.file_line, analysis.lines + self.dropped, self.read)
