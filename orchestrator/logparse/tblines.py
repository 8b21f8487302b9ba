"""The lines of a log while a traceback is open: every line is read, since traceback lines carry no needle.

The other half of ``LogParser``'s stream handling (``parser.py`` moves through the bytes and picks the lines
worth examining).  A run of frame lines of the open traceback's writer is taken as a block
(``frameruns``); another writer's line holding no needle is handled without decoding; the rest is examined
as a line (``rules.LineRules``).
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.logparse import frameruns
from orchestrator.logparse.events import LogEvent
from orchestrator.logparse.lines import LINE_CAP, Ending, decode, ending_at, line_end
from orchestrator.logparse.prefixes import is_prefix_only, quick_key
from orchestrator.logparse.rules import LineRules
from orchestrator.logparse.signatures import Catalogue

#: Longest line kept as "the line before" (a prefix-only line, a ``Process EngineCore:`` header).
PREV_CAP = 256


class TracebackLines(LineRules):
    """Reading the lines of a log while a traceback is open."""

    _line_no: int  # the number of the line being read (``LogParser``)
    def _number(self, buf: bytes, s: int) -> int:
        """The number of the line starting at ``s`` in the region being scanned (``LogParser._number``; a
        method, not a declared attribute, so that mypyc compiles the call)."""
        raise NotImplementedError

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        super().__init__(catalogue)
        self._runs = frameruns.KnownRuns()

    def _slow(self, buf: bytes, cursor: int, end: int, prev_raw: bytes | None, prev_cr: bool,
              events: list[LogEvent]) -> int:
        """Read every line while a traceback is open (``prev_raw``/``prev_cr``: the line before ``cursor``);
        returns where the fast path may resume."""
        while cursor < end and self._tbs.any_open():
            e, nxt = line_end(buf, cursor, end)
            self._line_no = self._number(buf, cursor)
            raw = buf[cursor:min(e, cursor + LINE_CAP)]
            ending = ending_at(buf, e, end)
            inherits = prev_cr and prev_raw is not None and (
                is_prefix_only(prev_raw) or (b"\x1b" in prev_raw and not self._tbs.after_head(prev_raw)))
            key = None if inherits else quick_key(raw)
            if key is None and not inherits and b"\x1b" in raw:  # a coloured prefix: an open traceback's head?
                key = self._tbs.key_by_head(raw)
            head = None if key is None else self._tbs.frame_head(key, ending)
            if head is not None and raw.startswith(head) and raw[len(head):len(head) + 1] in (b" ", b"\t"):
                # Frame lines of an open traceback (the bulk of one): what _examine would do, unparsed, for the
                # run of them that follows (same writer and header, indented, no signature, not its end).
                assert key is not None
                taken = self._frames(buf, cursor, end, key, head, ending)
                if taken:
                    cursor, prev_raw, prev_cr = taken
                    continue
            other = key is not None and not self._tbs.is_open(key) and not (
                raw[:1] in (b" ", b"\t") and self._tbs.wrap_awaited(self._line_no) is not None) and not (
                raw[:1].isalnum() and self._tbs.edge_awaiting(self._line_no)
                and self._tbs.edge_awaited(self._line_no, decode(raw)) is not None)
            if other:  # a line of another writer: what _examine does first, without decoding
                for tb in self._tbs.close_stale(self._line_no, key):
                    self._on_traceback(tb, events)
            if other and not self._general(raw):  # (a closed traceback may have made more needles relevant)
                self._progress_rule(raw, self._line_no, events)
                self._settle_raw(self._line_no, raw, events)
            else:
                self._examine(raw, self._line_no, ending, prev_raw, prev_cr, False, events)
            prev_raw = raw if e - cursor <= PREV_CAP else None
            prev_cr = ending is Ending.CR
            cursor = nxt
        return cursor

    def _frames(self, buf: bytes, cursor: int, end: int, key: str, head: bytes,
                ending: Ending) -> tuple[int, bytes | None, bool] | None:
        """Take the run of frame lines of ``key``'s traceback starting at ``cursor`` (whose line, already
        counted, is one): (next cursor, last line, it ended in ``\r``), or None when that first line must be
        examined.  A line stops the run unless it has the same head, is indented, holds no ANSI code, NUL or
        signature, and cannot end the traceback.  Runs are found a block at a time (``frameruns``); a line the
        block pass cannot vouch for is taken the long way."""
        taken: tuple[int, bytes | None, bool] | None = None
        n = len(head)
        match, add, may_match = self._match, self._tbs.add_frame, self._cat.may_match
        crlf_record = self._tbs.frame_head(key, Ending.LF) is None  # a bare "\n" would end the traceback
        while True:
            run = self._runs.at(buf, cursor, end, head, crlf_record)
            if run is not None:
                stop: int | None = cursor + len(run.raw)
            else:
                stop = frameruns.run_end(buf, cursor, end, head, crlf_record)
                if stop is not None:
                    run = _run(buf, cursor, stop, head, may_match)
                    self._runs.keep(head, crlf_record, run)
            if run is not None and stop is not None:
                msgs, k = run.messages, run.plain
                if k:
                    first = self._number(buf, cursor)
                    self._tbs.add_frames(key, msgs[:k] if k < len(msgs) else msgs, first)
                    pos = stop
                    if k < len(msgs):
                        pos = cursor
                        for _ in range(k):
                            pos = line_end(buf, pos, end)[1]
                    ls, te, cr = frameruns.line_before(buf, cursor, pos)
                    self._line_no = self._number(buf, ls)  # the run's last line
                    taken = (pos, buf[ls:te] if te - ls <= PREV_CAP else None, cr)
                    cursor = pos
                    if cursor >= end:
                        return taken
            e, nxt = line_end(buf, cursor, end)
            if taken is not None:
                if not buf.startswith(head, cursor) or buf[cursor + n:cursor + n + 1] not in (b" ", b"\t"):
                    return taken
                ending = ending_at(buf, e, end)
                if ending is Ending.EOF or (crlf_record and ending is not Ending.CR):
                    return taken
            raw = buf[cursor:min(e, cursor + LINE_CAP)]
            if taken is not None and (b"\x1b" in raw[n:] or b"\x00" in raw[n:]):
                return taken
            msg = raw[n:].decode("utf-8", "replace").rstrip()
            if match(msg):
                return taken
            if taken is not None:
                self._line_no = self._number(buf, cursor)
            add(key, msg, self._line_no)
            taken = (nxt, raw if e - cursor <= PREV_CAP else None, ending is Ending.CR)
            cursor = nxt
            if cursor >= end:
                return taken


def _run(buf: bytes, cursor: int, stop: int, head: bytes, may_match: Callable[[str], bool]) -> frameruns.Run:
    msgs = tuple(frameruns.messages(buf, cursor, stop, head))
    k = len(msgs)
    if may_match("\n".join(msgs)):  # some line may show a signature: the lines before the first one
        k = next(i for i, m in enumerate(msgs) if may_match(m))
    return frameruns.Run(buf[cursor:stop], msgs, k)
