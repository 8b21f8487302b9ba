"""Line-level helpers: terminators, ANSI stripping, decoding and the line cap.

A line ends at ``\\n``, ``\\r\\n`` or a bare ``\\r`` (tqdm separates its frames with ``\\r``), and is read as
a line of its own; lines are numbered as an editor numbers them, by ``\\n`` (a bare ``\\r`` goes on with the
same number).  A ``\\r\\n`` split across two chunks is still one terminator.
"""

from __future__ import annotations

from enum import Enum

from orchestrator.logparse.inert import inert

#: Bytes kept of any one line; the rest of the line is counted but dropped.
LINE_CAP = 16 * 1024


class Ending(str, Enum):
    """How a line ended: vLLM ends every line but the last of a multi-line record with ``\\r\\n``."""

    LF = "lf"  # "\n": the end of a log record
    CR = "cr"  # "\r" or "\r\n": more of the same record (or a tqdm frame) follows
    EOF = "eof"  # no terminator: the last line of a finished stream


def line_end(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """(end, next_start) of the line holding ``pos``."""
    lf = buf.find(b"\n", pos, limit)
    stop = lf if lf >= 0 else limit
    cr = buf.find(b"\r", pos, stop)
    if cr >= 0:
        nxt = cr + 2 if cr + 1 < limit and buf[cr + 1] == 0x0A else cr + 1
        return cr, nxt
    if lf >= 0:
        return lf, lf + 1
    return limit, limit


def ending_at(buf: bytes, end: int, limit: int) -> Ending:
    """The kind of terminator found at ``buf[end]``."""
    if end >= limit:
        return Ending.EOF
    return Ending.CR if buf[end] == 0x0D else Ending.LF


def decode(raw: bytes) -> str:
    """Bytes of one line to text: invalid UTF-8 replaced, capped, made inert (no escape sequence or control
    character but tab: ``logparse.inert``), so whatever shows it later cannot act on a terminal."""
    if len(raw) > LINE_CAP:
        raw = raw[:LINE_CAP]
    return inert(raw.decode("utf-8", "replace"), keep="\t")


class WholeLines:
    """The complete lines of a stream given chunk by chunk, for a reshaper (``unwrap``, ``spacing``,
    ``resplit``): ``feed`` hands ``_lines`` every line a chunk completes (ending in ``\n``) and keeps the line not
    yet ended for the next chunk; ``finish`` hands that last line to ``_last``.  ``read`` counts input bytes."""

    def __init__(self) -> None:
        self._rest = b""
        self.read = 0

    def feed(self, chunk: bytes) -> bytes:
        self.read += len(chunk)
        data = self._rest + chunk
        cut = data.rfind(b"\n") + 1
        self._rest = data[cut:]
        return self._lines(data[:cut])

    def finish(self) -> bytes:
        rest, self._rest = self._rest, b""
        return self._last(rest)

    def _lines(self, block: bytes) -> bytes:
        raise NotImplementedError

    def _last(self, rest: bytes) -> bytes:
        return self._lines(rest)


def line_start_after(buf: bytes, pos: int, end: int) -> int:
    """The first line start at or after ``pos`` (``end`` when none)."""
    if pos >= end:
        return end
    if pos > 0 and buf[pos - 1] in (0x0A, 0x0D) and not (buf[pos - 1] == 0x0D and buf[pos] == 0x0A):
        return pos
    lf = buf.find(b"\n", pos, end)
    cr = buf.find(b"\r", pos, lf if lf >= 0 else end)
    if cr >= 0:
        return cr + 2 if cr + 1 < end and buf[cr + 1] == 0x0A else cr + 1
    return lf + 1 if lf >= 0 else end
