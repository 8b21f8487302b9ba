"""A log whose line breaks were lost, split at its records again.

A log pasted into an issue outside a code block and copied back from the rendered page (Markdown joins the
lines of a paragraph with spaces), or passed through a tool that joined its lines, holds many vLLM records on
one line: ``... in __init__ ERROR 11-04 18:02:56 [multiproc_executor.py:597] self.all_reduce(data) ERROR
11-04 18:02:56 [multiproc_executor.py:597] File "...", line 162, in all_reduce ERROR 11-04 ...``.  Every
line but the record's first then reads as a message, and the exception line is lost inside one.
``joined_records`` recognises the shape on a sample (a line holding several record headers);
``Resplitter`` breaks a line before each record header after its start, where a space stood (the byte count
stays the file's), and keeps where it did so, so that line numbers in the verdict are still the file's
(``remap``).  The indentation the joining took away is not put back: the parser reads flattened frames.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import islice, pairwise

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

#: A vLLM record header, with the process prefix before it when there is one, NCCL's line prefix
#: (``host:pid:tid [rank] NCCL INFO``), PyTorch's rank prefix of a distributed job's lines (``[rank3]: ``) or
#: Ray's prefix of a worker's output alone after a blank, where the joining put one (``(SGLangWorker pid=38138) ``;
#: not a worker's progress bar after another's, glued by their ``\r``).
#: A header without its time stamp (``ERROR [multiproc_executor.py:949] ``, as vLLM 0.19+ shortens a record's
#: continuation lines) counts only behind a process prefix: alone it is too short a shape to split at.
_RECORD = re.compile(rb"(?:(?P<p>\([\w.\-:]+(?: (?:TP|PP|DP|EP)\d+(?:_(?:TP|PP|DP|EP)\d+)*)?(?: rank=\d+)? pid=\d+\) ))?"
                     rb"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                     rb"(?:(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? |(?(p)|(?!)))\[?[^\]\s\[]+:\d+\] "
                     rb"|[\w.\-]+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE) |\[rank\d+\]: "
                     rb"|(?<= )\([\w.\-]+ pid=\d+(?:, ip=[\d.]+)?\) )")
#: Record headers on one line that show the log's line breaks were lost (a record quoting another holds two).
_MIN_JOINED = 3
_LONG = 120  # three headers and a word each are longer


def joined_records(sample: bytes) -> bool:
    """Whether a line of ``sample`` holds several record headers (its line breaks were lost).  Only long lines
    with as many ``] `` / ``]: `` (every header ends so) are searched: the pattern has no literal start, and a
    log's sample is a megabyte."""
    return any(len(line) > _LONG and line.count(b"] ") + line.count(b"]: ") + line.count(b" pid=") >= _MIN_JOINED
               and len(list(islice(_RECORD.finditer(line), _MIN_JOINED))) == _MIN_JOINED
               for line in sample.split(b"\n"))


def _pieces(line: bytes) -> list[bytes]:
    """``line`` broken before each record header that follows text on it (the space before it dropped), and
    without the blanks before a header that starts it (the space the joining left there)."""
    found = [m.start() for m in _RECORD.finditer(line)]
    if found and found[0] > 0 and not line[:found[0]].strip():
        line, found = line[found[0]:], [at - found[0] for at in found]
    cuts = [at for at in found if at > 0 and line[at - 1:at] == b" "]
    if not cuts:
        return [line]
    bounds = [0, *cuts, len(line)]
    return [line[a:b - 1] + b"\n" if i < len(cuts) else line[a:b] for i, (a, b) in enumerate(pairwise(bounds))]


class Resplitter(WholeLines):
    """Breaks lines before the record headers inside them, chunk by chunk (``padded.Repadder``: at a
    terminal's width); keeps where, for line numbers of the file."""

    def __init__(self) -> None:
        super().__init__()
        self._out = 0  # lines given out
        # Each file line broken into pieces: the given-out line (1-based) of its first piece, its pieces, and
        # the pieces added by such lines before it.
        self._first: list[int] = []
        self._count: list[int] = []
        self._added_before: list[int] = []
        self.added = 0

    def _pieces(self, line: bytes) -> list[bytes]:
        """``line`` (with its ending) as the lines it was before it was joined (the bytes the same in all)."""
        return _pieces(line) if b"] " in line or b"]: " in line or b" pid=" in line else [line]

    def _lines(self, block: bytes) -> bytes:
        out: list[bytes] = []
        for line in block.splitlines(keepends=True):
            pieces = self._pieces(line)
            if len(pieces) > 1:
                self._first.append(self._out + 1)
                self._count.append(len(pieces))
                self._added_before.append(self.added)
                self.added += len(pieces) - 1
            self._out += len(pieces)
            out.extend(pieces)
        return b"".join(out)

    def file_line(self, line_no: int) -> int:
        """The file's line number (1-based) of given-out line ``line_no``."""
        i = bisect_right(self._first, line_no) - 1
        if i < 0:
            return line_no
        first, added = self._first[i], self._added_before[i]
        if line_no < first + self._count[i]:
            return first - added  # a piece of a broken line: that line
        return line_no - added - (self._count[i] - 1)

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with line numbers and sizes of the file, not of the text read."""
        return analysis.renumbered(self.file_line, analysis.lines - self.added, self.read)
