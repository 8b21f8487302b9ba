"""Runs of traceback frame lines found in one regex pass, instead of line by line.

While a writer's traceback is open, its frame lines are the bulk of the log (~40 lines a traceback, one
every ~25 KB in a crashing job's log).  Each starts with the writer's head (its prefix and record header,
identical on every line of the record), then a blank or a tab; ``run_end`` finds where such a run stops with
one ``re.match`` (a back-reference checks the head), so the parser handles the run as a block: one decode,
one signature gate over the block, one list of messages.

A server that fails requests prints the same traceback for each, byte for byte (uvicorn's ``Exception in
ASGI application``, a raw stderr traceback: no timestamp on the lines), so the last run seen per head is
kept (``KnownRuns``): a run that starts with the same bytes and ends where it did is taken with one
comparison, its messages already decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from orchestrator.logparse.lines import LINE_CAP

_LF, _CR = 0x0A, 0x0D


@lru_cache(maxsize=64)
def _run_re(n: int, crlf: bool) -> re.Pattern[bytes]:
    # A line: the head (n bytes), a blank or a tab, text without a terminator, an ANSI code or a NUL, no longer
    # than the line cap; then its terminator: only "\r" / "\r\n" when a bare "\n" would end the record.
    line = rb"[ \t][^\r\n\x1b\x00]{0,%d}" % (LINE_CAP - n - 1)
    term = rb"\r\n?" if crlf else rb"(?:\r\n?|\n)"
    return re.compile(rb"(?P<h>[^\r\n]{%d})%s%s(?:(?P=h)%s%s)*" % (n, line, term, line, term))


def run_end(buf: bytes, cursor: int, end: int, head: bytes, crlf: bool) -> int | None:
    """Where the run of frame lines of ``head`` starting at ``cursor`` ends (just past a terminator), or None
    when the line at ``cursor`` is not one."""
    m = _run_re(len(head), crlf).match(buf, cursor, end)
    if m is None or m.group("h") != head:
        return None
    return m.end()


def messages(buf: bytes, start: int, stop: int, head: bytes) -> list[str]:
    """The run's lines (from ``start`` to ``run_end``'s ``stop``) decoded, without ``head`` and trailing
    blanks.  All in C: the run holds no terminator but its lines' (``bytes.splitlines`` splits on exactly
    those), and ``\n`` + head can only be a line start; a head decodes alike alone or with its line, since
    what follows it is a blank or a tab."""
    body = b"\n".join(buf[start:stop].splitlines())[len(head):].replace(b"\n" + head, b"\n")
    return [m.rstrip() for m in body.decode("utf-8", "replace").split("\n")]


def line_before(buf: bytes, floor: int, pos: int) -> tuple[int, int, bool]:
    """(start, end, ended in ``\\r``) of the line whose terminator ends just before ``pos`` (> ``floor``)."""
    if buf[pos - 1] == _LF:
        cr = pos - 2 >= floor and buf[pos - 2] == _CR
        te = pos - 2 if cr else pos - 1
    else:
        cr, te = True, pos - 1
    ls = max(buf.rfind(b"\n", floor, te), buf.rfind(b"\r", floor, te)) + 1
    return max(ls, floor), te, cr


@dataclass(frozen=True)
class Run:
    """A run of frame lines as found: its bytes (from its first line's start to past its last terminator),
    its ``messages`` and how many of them come before the first that may show a signature."""

    raw: bytes
    messages: tuple[str, ...]
    plain: int


#: Longest run kept, and how many heads are kept before ``KnownRuns`` starts again (at most ~1 MB a parser:
#: the daemon holds one parser per followed run).
_RUN_CAP, _HEADS_CAP = 32 * 1024, 16


class KnownRuns:
    """The last run of frame lines seen for each head (and record shape)."""

    def __init__(self) -> None:
        self._last: dict[tuple[bytes, bool], Run] = {}

    def at(self, buf: bytes, cursor: int, end: int, head: bytes, crlf: bool) -> Run | None:
        """The kept run when ``buf`` at ``cursor`` repeats it and the run ends there as well (what
        ``run_end`` would find), else None."""
        run = self._last.get((head, crlf))
        if run is None or not buf.startswith(run.raw, cursor, end):
            return None
        stop = cursor + len(run.raw)
        if stop < end and ((buf[stop] == _LF and run.raw[-1] == _CR)
                           or run_end(buf, stop, end, head, crlf) is not None):
            return None  # the terminator or the run goes on: not the same run
        return run

    def keep(self, head: bytes, crlf: bool, run: Run) -> None:
        if len(run.raw) > _RUN_CAP:
            return
        if len(self._last) >= _HEADS_CAP:
            self._last.clear()
        self._last[(head, crlf)] = run
