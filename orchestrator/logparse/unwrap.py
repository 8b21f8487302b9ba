"""A log pasted from a terminal that hard-wrapped its long lines, put back together.

Copying from some terminals (a web console, PuTTY, ``tmux capture-pane`` without ``-J``) breaks every line
longer than the window into rows of exactly its width.  A wrapped frame line then reads as an exception line
and an exception's message is cut at the edge.  ``wrap_width`` recognises the shape on a sample: many lines of
exactly the longest length, with different texts, whose next lines do not start the way the log's lines
usually start, nor the way the row itself does (a log cut at a width -- ``cut -c-200`` --, near-identical
lines repeated, or a drawn table have them start normally, and are left alone).
``Unwrapper`` joins each row of that width with the next, and keeps where it did so, so that line numbers
in the verdict are still the file's (``remap``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines
from orchestrator.logparse.prefixes import parse_line
from orchestrator.logparse.tbforms import is_ipython_header

#: Widths taken for a terminal's; rows of exactly the width needed, and the share of them whose next line
#: may start like an ordinary line (a continuation starts anywhere in a line's text).
_WIDTHS = range(60, 1001)
_MIN_ROWS = 3
_MAX_NORMAL_NEXT = 0.5
_START = 6  # bytes compared for "starts like the log's lines usually do"
_END = 8  # bytes compared for "rows all end alike": a terminal's cut ends them mid-text, each elsewhere
_ANSI = re.compile(rb"\x1b\[[0-9;]*m")
_DIGITS = re.compile(rb"\d")
#: A short last column set off by a run of blanks: a layout's right-aligned column (``rich``'s source,
#: BuildKit's step time ``0.0s``, a table's last field), which a terminal's cut mid-text does not leave.
_RIGHT_COLUMN = re.compile(rb"\S {2,}\S{1,40}$")
#: The end of a tqdm frame (``| 1318/1319 [00:26<00:00,  4.70it/s]``).
_TQDM_END = re.compile(rb"\d+/\d+ \[[\d:<?]+(?:, *[\d.?]+ ?(?:it/s|s/it|\w+/s))?\]$")
_HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(rb'File "[^"]*", line \d+, in ')
_FRAME_CUT_IN_NAME = re.compile(rb'File "[^"]*", line \d+, in \w*$')  # (``..., in cutl`` / ``ass_scaled_mm``; ``in `` / ``result``)
_NAME_REST = re.compile(rb"\w+$")
_OPEN_PATH = re.compile(rb'File "[^"\s]*$')
_PATH_REST = re.compile(rb'[^"\s]*"')
_WARNING = re.compile(rb"\.py:\d+: \w*Warning: ")
#: gcc's and clang's diagnostic line, and the source excerpt (or its caret line) they print under it.
_DIAGNOSTIC = re.compile(rb":\d+:\d+: (?:warning|note|error|fatal error): ")
_EXCERPT = re.compile(rb" *\d* \| ")
#: A sentence's first word (``Special tokens file saved in ...``).
_SENTENCE_START = re.compile(rb"[A-Z][a-z]+ [a-z]")
_LEVEL_START = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?::| )")  # uvicorn's, Python logging's


@dataclass(frozen=True)
class Wrapping:
    """How a log was hard-wrapped: the width, and how its lines usually start (a row after a row of the
    width that starts so is a line of its own: the line before was exactly that long)."""

    width: int
    starts: frozenset[bytes]


def wrap_width(sample: bytes) -> Wrapping | None:
    """How the sample's lines were hard-wrapped, or None when they were not."""
    if sample.count(b"\r") != sample.count(b"\r\n"):  # a lone \r (a tqdm bar): a raw log, never pasted
        return None
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in sample.split(b"\n")[:-1]]
    if len(lines) < _MIN_ROWS:
        return None
    width = max(map(len, lines))
    rows = [i for i, ln in enumerate(lines) if len(ln) == width and not _laid_out(ln)]
    # Fewer rows do when two follow each other: one line more than twice the width (a short paste, even one
    # line of it: an exception line wrapped over three rows).
    pair = any(b - a == 1 for a, b in pairwise(rows))
    if len(lines) < 2 * _MIN_ROWS and not pair:
        return None
    enough = len(rows) >= _MIN_ROWS or pair
    if width not in _WIDTHS or not enough:
        return None
    # Rows cut inside frame lines that the lines after them complete are a terminal's cut however alike they are
    # (a worker's frames: one prefix and one long path, cut at the same place); so are the others of a sample
    # where most rows are (a source line's row among them).
    split = sum(i + 1 < len(lines) and _split_frame(lines[i], lines[i + 1]) for i in rows)
    if split < len(rows) and not (split >= 2 and 2 * split > len(rows)):
        if len({lines[i] for i in rows}) < min(_MIN_ROWS, len(rows)):
            return None
        if len({_DIGITS.sub(b"0", lines[i]) for i in rows}) < 2:
            return None  # one line logged again and again with other numbers (a timestamp): a length, not a width
        if len(rows) >= 2 and len({lines[i][-_END:] for i in rows}) == 1:
            return None  # rows that all end alike (``.hlo_module.pb``, ``input_type=str]``) are whole lines, not cuts
    if 2 * sum(lines[i].endswith(b"  ") for i in rows) > len(rows):
        return None  # rows padded to the width (a layout drawn in columns, ``rich``'s), not cut at it
    # How lines start, counted on lines that surely start one (not after a row of the width).
    usual = Counter(ln[:_START] for i, ln in enumerate(lines) if i == 0 or len(lines[i - 1]) != width)
    common = {start for start, n in usual.most_common(8) if n >= max(2, sum(usual.values()) // 20)}
    # A next line starting like lines do, or like the row itself but for its numbers (lines repeated with small
    # changes: one device-side assert per GPU thread, a progress bar's frames), is a line of its own; a
    # continuation starts mid-text.
    after = [(lines[i + 1], lines[i]) for i in rows if i + 1 < len(lines)]
    normal = sum(1 for nxt, row in after if nxt[:_START] in common or (_like(nxt, row) and row.strip())
                 or _own_line(nxt) or _source_after_frame(row, nxt))
    # With only two rows (one long line), the line after each must be a continuation, and not indented: a cut
    # lands mid-text, seldom before a run of blanks (two indented ``key: value`` lines of one length are not).
    # Nor may they hold multi-byte characters: a terminal cuts at a column, and such a row as long in bytes as
    # the other is shorter in columns (two lines of a model's answer with arrows in them, of one byte length).
    # Nor may a row end a word or a sentence that a sentence's first word follows (``...map.json`` / ``Special
    # tokens ...``, ``... might be incorrect. `` / ``For debugging ...``): a cut seldom lands just there.
    if len(rows) < _MIN_ROWS:
        normal += sum(1 for nxt, row in after if nxt[:2] == b"  " or not row.isascii()
                      or (_word_end(row) and _SENTENCE_START.match(nxt) is not None))
    most = _MAX_NORMAL_NEXT * len(after) if len(rows) >= _MIN_ROWS else 0
    return Wrapping(width, frozenset(common)) if after and normal <= most else None


def _split_frame(row: bytes, nxt: bytes) -> bool:
    """Whether ``row`` ends inside a frame line that ``nxt`` completes (a worker's frames, one prefix and one
    long path, are all cut at the same place: ``.../core.py"`` then ``, line 846, in run_engine_core``), or in
    its function's name."""
    if _FRAME.search(row) is None:
        # (or cut in its path, the log cut before its line number: ``.../executor/ab`` then ``stract.py", lin``)
        return _FRAME.search(row[-200:] + nxt[:200]) is not None or (
            _OPEN_PATH.search(row) is not None and _PATH_REST.match(nxt) is not None)
    return _FRAME_CUT_IN_NAME.search(row) is not None and _NAME_REST.match(nxt) is not None


def _word_end(row: bytes) -> bool:
    """Whether ``row`` ends a word or a sentence (its blanks aside)."""
    last = row.rstrip()[-1:]
    return last.isalnum() or last in (b".", b"!", b"?")


class Unwrapper(WholeLines):
    """Joins rows of ``width`` bytes with the line after them, chunk by chunk."""

    def __init__(self, wrapping: Wrapping) -> None:
        super().__init__()
        self._width, self._starts_like = wrapping.width, wrapping.starts
        self._line = 0  # lines given out
        self._joined = False  # the line being given out continues on the next row
        self._row = b""  # the last row read
        self._starts: list[int] = []  # given-out lines (0-based) after which the input had one more line

    def _last(self, rest: bytes) -> bytes:
        return rest

    def _lines(self, block: bytes) -> bytes:
        out: list[bytes] = []
        for row in block.splitlines(keepends=True):
            text = row.rstrip(b"\r\n")
            if self._joined and (text[:_START] in self._starts_like or _own_line(text)
                                 or _source_after_frame(self._row, text)):
                # The row before was a line that long.
                out.append(b"\n")
                self._line += 1
            elif self._joined:
                self._starts.append(self._line)
            self._joined, self._row = len(text) == self._width, text
            if self._joined:
                out.append(text)
            else:
                out.append(row)
                self._line += 1
        return b"".join(out)

    def file_line(self, line_no: int) -> int:
        """The file's line number (1-based) of the first row of joined line ``line_no``."""
        return line_no + bisect_right(self._starts, line_no - 2)

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with line numbers and sizes of the file, not of the joined text."""
        return analysis.renumbered(self.file_line, analysis.lines + len(self._starts), self.read)


def _like(nxt: bytes, row: bytes) -> bool:
    """Whether ``nxt`` starts as ``row`` does, but for its digits."""
    return _DIGITS.sub(b"0", nxt[:_START]) == _DIGITS.sub(b"0", row[:_START])


def _laid_out(row: bytes) -> bool:
    """Whether a row is drawn to a width rather than cut at it: a table's (nvidia-smi's ``| ... |`` /
    ``+---+``), a row whose last column is right-aligned at the width (``INFO     Saved 3000 rows
    data_generation_offline.py:431``: rich's log record; BuildKit's ``=> [asr 1/6] FROM ...   0.0s``), a rule
    of dashes or a title centred in one, or IPython's traceback header (its exception name padded to 75 columns,
    under a rule of 75 dashes)."""
    if row[:1] in b"|+" and row[-1:] in b"|+":
        return True
    if _RIGHT_COLUMN.search(row) is not None:
        return True  # a column right-aligned at the console's width (rich's log record, BuildKit's progress)
    if row.endswith(b"]") and _TQDM_END.search(row) is not None:
        return True  # a progress bar's frame, whole: tqdm draws its frames to the same width
    text = row.strip()
    if len(text) > 6 and not text[:1].isalnum() and text[:3] == text[-3:] == text[:1] * 3:
        return True  # a rule, or a title centred in one (``---- Final Score ----``: ``f"{x:-^80}"``)
    return is_ipython_header(row.decode("utf-8", "replace"))


def _own_line(row: bytes) -> bool:
    """Whether a row after a row of the width cannot continue it: an empty row (a terminal makes none for a
    line that fills it exactly), a process prefix alone (what precedes a progress bar's frames once its
    ``\r`` became a line break: a progress section has rows of one width), or a log record's start."""
    text = _ANSI.sub(b"", row).strip()
    if not text:
        return True
    line = parse_line(text.decode("utf-8", "replace"))
    return (line.level is not None or (line.pid is not None and not line.message.strip())
            or _LEVEL_START.match(line.message) is not None or line.message.startswith(_HEADER))


def _source_after_frame(row: bytes, nxt: bytes) -> bool:
    """Whether ``nxt`` is the source line a whole frame line shows under it (indented deeper than ``File``),
    a Python warning under its ``path.py:46: UserWarning: ...`` line (indented two), a compiler's under its
    diagnostic (``k.cpp:363:18: note: ...``, then ``  363 |   if (...)``), or pprint's next item (indented,
    after a comma or an opening bracket): a row that wrapped mid-frame goes on mid-text."""
    if nxt.startswith(b"    ") and _FRAME.search(row) is not None:
        return True
    if _EXCERPT.match(nxt) is not None and _DIAGNOSTIC.search(row) is not None:
        return True
    if row[-1:] in b",{[(" and nxt.startswith(b"  "):
        return True  # a structure laid out a line per item (pprint's, JSON's): indented after a comma or bracket
    return nxt.startswith(b"  ") and nxt[2:3] != b" " and _WARNING.search(row) is not None
