"""``LogParser``: bytes in (any chunking), events and a verdict out.

The parser keeps a byte offset and a line count, and the pending partial line (capped); the semantic state
and the line rules live in ``LineRules`` (``rules.py``).  Complete lines are handled in large regions: the
funnel finds the few lines holding a needle and only those are decoded; while a traceback is open every
line is read, since traceback lines carry no needle.
"""

from __future__ import annotations

from typing import Any

from orchestrator.logparse import native
from orchestrator.logparse.analysis import Analysis, SignatureCount
from orchestrator.logparse.events import LogEvent
from orchestrator.logparse.funnel import needles_added
from orchestrator.logparse.lines import LINE_CAP, Ending, ending_at, line_end, line_start_after
from orchestrator.logparse.phases import Phase, ProgressReading, frame_at, frame_run, frame_unit
from orchestrator.logparse.regionhits import RegionHits
from orchestrator.logparse.signatures import Catalogue
from orchestrator.logparse.tail import LogTail, outlived_its_workers
from orchestrator.logparse.tblines import PREV_CAP as _PREV_CAP
from orchestrator.logparse.tblines import TracebackLines

SNAPSHOT_VERSION = 2  # 2: line numbers are an editor's (bare "\r" ends a line but not a numbered one)
#: The funnel scans a region in windows: small first (phases change early in a log), doubling after.
_WINDOW = 512 * 1024
_MAX_WINDOW = 16 * 1024 * 1024
#: When needles drop out of the funnel the rest is rescanned from a small window, doubling after: state changes
#: come in bursts.
_RESCAN_WINDOW = 4 * 1024
#: How far needles that came into the funnel inside a window are looked for first (the signs of life looked for
#: while an error line is pending: the next one usually clears it, and a server's request lines would make a long
#: stretch cost a match each); the stretch doubles while they are still wanted, up to the window's end.
_LOOKAHEAD = 2 * 1024
_LF, _CR = 0x0A, 0x0D


class LogParser(TracebackLines):
    """Incremental parser of one job's log; see the module doc of ``orchestrator.logparse``."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        super().__init__(catalogue)
        self._offset = 0
        self._line_no = 0  # the number of the line being (or last) handled
        self._nl = 0  # newlines consumed (before the region being scanned, or its anchor)
        self._mid = False  # the last terminator consumed was a bare "\r": the numbered line goes on
        self._anchor = 0  # a position in the region being scanned, with self._nl the newlines before it
        self._skip_lf = False
        self._pending = b""
        self._pending_len = 0
        self._prev_raw: bytes | None = b""
        self._prev_cr = False
        self._window = _WINDOW  # scan window of the funnel (a speed setting, not state)
        self._tail = LogTail()

    # --- public API ----------------------------------------------------------------------------------------

    @property
    def tail_lines(self) -> list[str]:
        """The log's last lines as a terminal shows them (inert text): the evidence when no exception is."""
        return self._tail.lines

    def next_run(self) -> LogParser:
        """A parser for the run that follows this one in the same log (``runs.py``): the log's tail goes on."""
        parser = LogParser(self._cat)
        parser._tail = self._tail
        return parser

    @property
    def partial_line(self) -> bool:
        """Whether bytes of a line not yet terminated are held (the next chunk goes on with that line)."""
        return self._pending_len > 0

    @property
    def partial_text(self) -> bytes | None:
        """The unterminated line held so far, when it is held whole (not longer than the line cap)."""
        return self._pending if self._pending_len and self._pending_len == len(self._pending) else None

    def take_partial_line(self) -> bytes | None:
        """Give back the unterminated line held (no rule has read it yet) for the caller to feed again, to the
        next run's parser (``runs.py``: a start line the chunks split); None, keeping it, when it is not held
        whole or the tail cannot give it back."""
        raw = self.partial_text
        if raw is None or not self._tail.take_back(raw):
            return None
        self._pending, self._pending_len = b"", 0
        return raw

    @property
    def line_end_offset(self) -> int:
        """Bytes consumed up to and including the last line terminator seen."""
        return self._offset

    def feed(self, chunk: bytes) -> list[LogEvent]:
        """Consume ``chunk``; events for the lines it completed."""
        events: list[LogEvent] = []
        buf = bytes(chunk)
        self._tail.feed(buf)
        size = len(buf)
        pos = 0
        if size and self._skip_lf:
            self._skip_lf = False
            if buf[0] == _LF:
                pos = 1
                self._offset += 1
                self._nl, self._mid = self._nl + 1, False  # the "\n" of a "\r\n" split by the chunks
        if pos < size and self._pending_len:
            pos = self._complete_pending(buf, pos, events)
        if pos >= size:
            return events
        last = max(buf.rfind(b"\n", pos), buf.rfind(b"\r", pos))
        if last < 0:
            self._hold(buf, pos)
            return events
        end = last + 1
        if buf[last] == _CR and end == size:
            self._skip_lf = True
        self._scan_region(buf, pos, end, events)
        self._offset += end - pos
        if end < size:
            self._hold(buf, end)
        return events

    def finish(self) -> list[LogEvent]:
        """The stream ended: handle a trailing unterminated line and close open tracebacks."""
        events: list[LogEvent] = []
        self._tail.finish()
        if self._pending_len:
            self._line_no = self._nl + 1
            self._mid = True
            self._offset += self._pending_len
            raw = self._pending
            self._pending, self._pending_len = b"", 0
            self._examine(raw, self._line_no, Ending.EOF, self._prev_raw, self._prev_cr, False, events)
            self._prev_raw, self._prev_cr = (raw if len(raw) <= _PREV_CAP else None), False
        for tb in self._tbs.close_all():
            self._on_traceback(tb, events)
        tail = self._tail.lines
        self._last_words(tail, events)
        self._settle(self._line_no, "", events)
        return events

    def analysis(self) -> Analysis:
        """The verdict as of everything fed so far."""
        sigs = sorted(self._sigs.items(), key=lambda kv: (kv[1][1], kv[0]))
        rc, failed, phase = self._ev.root_cause(), self._ev.failed(), self._effective_phase()
        if failed and self._ev.orphans_only() and outlived_its_workers(self._tail.lines):
            rc, failed, phase = None, False, Phase.STOPPED  # an offline script that ended: its workers saw it go
        return Analysis(
            phase=phase,
            shards=self._shards,
            failed=failed,
            root_cause=rc,
            signatures=tuple(SignatureCount(k, v[0], v[1]) for k, v in sigs),
            lines=self._nl + self._mid,
            bytes=self._offset + self._pending_len,
            progress=self._progress,
            weights_load_s=self._weights_s,
            errors=self._errors,
            first_error_at=self._first_error_at,
            first_error=self._ev.first_error_cause(),
        )

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state as of ``line_end_offset`` (the pending partial line is not included)."""
        return {
            "v": SNAPSHOT_VERSION,
            "offset": self._offset,
            "line_no": self._line_no,
            "nl": self._nl,
            "mid": self._mid,
            "skip_lf": self._skip_lf,
            "prev": None if self._prev_raw is None else self._prev_raw.decode("latin-1"),
            "prev_cr": self._prev_cr,
            "tail": self._tail.to_json(self._pending_len),
            **self._rules_state(),
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], catalogue: Catalogue | None = None) -> LogParser:
        """A parser that continues as if the bytes before ``snap['offset']`` had been fed."""
        if snap.get("v") not in (1, SNAPSHOT_VERSION):
            raise ValueError(f"unsupported log parser snapshot version {snap.get('v')!r}")
        p = cls(catalogue)
        p._offset = int(snap["offset"])
        # Version 1 counted a bare "\r" as a line: a run followed across the upgrade numbers on from there.
        p._line_no = int(snap["line_no"])
        p._nl = int(snap.get("nl", p._line_no))
        p._mid = bool(snap.get("mid", False))
        p._skip_lf = bool(snap["skip_lf"])
        p._prev_raw = None if snap["prev"] is None else str(snap["prev"]).encode("latin-1")
        p._prev_cr = bool(snap["prev_cr"])
        p._tail = LogTail.from_json(snap.get("tail"))
        p._load_rules_state(snap)
        return p

    # --- stream handling ------------------------------------------------------------------------------------

    def _hold(self, buf: bytes, pos: int) -> None:
        """Keep the unterminated tail ``buf[pos:]`` (capped) as the pending line."""
        room = LINE_CAP - len(self._pending)
        if room > 0:
            self._pending += buf[pos:pos + room]
        self._pending_len += len(buf) - pos

    def _complete_pending(self, buf: bytes, pos: int, events: list[LogEvent]) -> int:
        lf = buf.find(b"\n", pos)
        cr = buf.find(b"\r", pos, lf if lf >= 0 else len(buf))
        t = cr if cr >= 0 else lf
        if t < 0:
            self._hold(buf, pos)
            return len(buf)
        raw = (self._pending + buf[pos:min(t, pos + LINE_CAP)])[:LINE_CAP]
        nxt = t + 1
        if buf[t] == _CR:
            if nxt < len(buf) and buf[nxt] == _LF:
                nxt += 1
            elif nxt == len(buf):
                self._skip_lf = True
        self._offset += self._pending_len + (nxt - pos)
        whole = self._pending_len + (t - pos)
        self._pending, self._pending_len = b"", 0
        self._line_no = self._nl + 1
        ending = Ending.CR if buf[t] == _CR else Ending.LF
        self._mid = buf[nxt - 1] == _CR
        self._nl += not self._mid
        self._examine(raw, self._line_no, ending, self._prev_raw, self._prev_cr, False, events)
        self._prev_raw, self._prev_cr = (raw if whole <= _PREV_CAP else None), ending is Ending.CR
        return nxt

    def _prev_line(self, buf: bytes, region: int, s: int) -> tuple[bytes | None, bool]:
        """The (short) line before the line starting at ``s``, and whether it ended in ``\\r``."""
        if s <= region:
            return self._prev_raw, self._prev_cr
        t = s - 1
        if buf[t] == _LF:
            cr = t - 1 >= region and buf[t - 1] == _CR
            pe = t - 1 if cr else t
        else:
            cr, pe = True, t
        lo = max(region, pe - _PREV_CAP - 1)
        j = max(buf.rfind(b"\n", lo, pe), buf.rfind(b"\r", lo, pe))
        if j >= 0:
            ps = j + 1
        elif lo == region:
            ps = region
        else:
            return None, cr
        if pe - ps > _PREV_CAP:
            return None, cr
        return buf[ps:pe], cr

    def _number(self, buf: bytes, s: int) -> int:
        """The number of the line starting at ``s`` in the region being scanned, as an editor counts (one more
        than the newlines before it); positions asked for only move forward."""
        self._nl += buf.count(b"\n", self._anchor, s)
        self._anchor = s
        return self._nl + 1

    def _scan_region(self, buf: bytes, start: int, end: int, events: list[LogEvent]) -> None:
        """Handle the complete lines in ``buf[start:end]`` (``end`` is just past a terminator).

        Two sorted hit lists are merged on the fly: ``general`` (needles) and ``frames`` (tqdm marks).  A line
        holding only frames takes the cheap progress path.  Newlines are counted lazily, only up to lines that
        need a number (``_number``).

        When the funnel state changes inside a window, needles that dropped out make the rest of the window
        be rescanned (from a small window).  Needles that came in (the signs of life looked for while an
        error line is pending) are looked for with ``bytes.find`` over a short stretch next to the window's
        hits (the window is cut there, and restored when the state returns to the scanned one), so an error
        line cleared a few lines later costs no rescan.
        """
        self._anchor = start
        state = handled = self._funnel_state()  # the state the window was scanned with; the last one handled
        relevant = self._funnel.relevant(*state)
        general: list[int] | None = None
        frames: list[int] = []
        extra: list[int] = []  # where needles relevant now but not scanned for start (to ``w_end``), sorted
        ei = 0
        full_end = -1  # the scanned window's end while w_end is cut short for ``extra``
        added: tuple[bytes, ...] = ()  # the needles ``extra`` holds hits of
        ahead = _LOOKAHEAD  # the length of the stretch ``extra`` was looked for over
        gi = fi = 0
        window, w_end = self._window, start
        cursor = start
        rfind, find = buf.rfind, buf.find
        native_ok = native.available()
        region: RegionHits | None = None  # after a rescan: hits found once per unit, sliced per window
        touched = False  # a rule ran on the last line: the state may have changed
        while cursor < end:
            if self._tbs.any_open():
                cursor = self._slow(buf, cursor, end, *self._prev_line(buf, start, cursor), events)
                touched = True
                continue
            if touched:
                touched = False
                now = self._funnel_state()
                if now != handled:
                    prev, handled = handled, now
                    wanted = self._funnel.relevant(*now)
                    if general is not None and (now[0], now[2]) == (prev[0], prev[2]) and now[1]:
                        # Only the clean stop came: its needles (a burst of shutdown lines) drop out without a
                        # rescan; a line holding only them is checked again (``_general``) and skipped.
                        pass
                    elif general is not None and (more := needles_added(relevant, wanted)) is not None:
                        if full_end >= 0:
                            w_end, full_end = full_end, -1
                        added, ahead = more, _LOOKAHEAD
                        if added:  # look for them over a short stretch only: cut the window there
                            full_end = w_end
                            w_end = line_start_after(buf, min(w_end, cursor + ahead), end)
                        extra, ei = self._funnel.scan(buf, cursor, w_end, added, native_ok), 0
                    else:  # needles dropped out: rescan the rest with the smaller set, from a small window
                        general, window = None, _RESCAN_WINDOW
                        if region is None and end - cursor >= _RESCAN_WINDOW:
                            region = RegionHits(self._funnel, buf, cursor, end)
                        self._window = window
            if full_end >= 0 and w_end <= cursor < full_end:
                # The stretch looked over for the needles that came in is used up and they are still wanted: the
                # next one, twice as long (the window's hits stand).
                ahead = min(ahead * 2, _MAX_WINDOW)
                w_end = line_start_after(buf, min(full_end, cursor + ahead), end)
                extra, ei = self._funnel.scan(buf, cursor, w_end, added, native_ok), 0
                if w_end >= full_end:
                    full_end = -1
            if general is None or cursor >= w_end:
                # Scan a window (growing while nothing changes).
                state = handled = self._funnel_state()
                relevant = self._funnel.relevant(*state)
                extra, full_end = [], -1
                w_end = line_start_after(buf, min(end, cursor + window), end)
                if region is None:
                    general = self._funnel.scan(buf, cursor, w_end, relevant, native_ok)
                    frames = self._funnel.scan_progress(buf, cursor, w_end)
                else:
                    general, frames = region.scan(cursor, w_end, relevant), region.scan_progress(cursor, w_end)
                gi = fi = 0
                window = self._window = min(window * 2, _MAX_WINDOW)
            while gi < len(general) and general[gi] < cursor:
                gi += 1
            while fi < len(frames) and frames[fi] < cursor:
                fi += 1
            g = general[gi] if gi < len(general) else w_end
            if extra:
                while ei < len(extra) and extra[ei] < cursor:
                    ei += 1
                if ei < len(extra) and extra[ei] < g:
                    g = extra[ei]
            f = frames[fi] if fi < len(frames) else w_end
            p = min(g, f)
            if p >= w_end:
                cursor = w_end
                continue
            s = max(rfind(b"\n", cursor, p), rfind(b"\r", cursor, p)) + 1
            if s <= 0:
                s = cursor
            lf = find(b"\n", p, end)
            cr = find(b"\r", p, lf if lf >= 0 else end)
            if cr >= 0:
                e = cr
                nxt = cr + 2 if cr + 1 < end and buf[cr + 1] == 0x0A else cr + 1
            else:
                e = nxt = lf
                nxt += 1
            cap = e if e - s <= LINE_CAP else s + LINE_CAP
            cursor = nxt
            if g >= cap:  # only tqdm marks on this line (within the cap): the progress path
                pair = frame_at(buf, s, f) if f < cap else None
                if pair is None:
                    continue
                done, total = pair
                seen = self._progress_key_seen
                if (seen is not None and seen[0] == total and seen[2] == (1 if done >= total else 0)
                        and seen[1] == (done * 100 // total if total else done)
                        and not self._progress_matters()):
                    self._frame = (done, total, buf[f:e])  # the latest reading, built at the end
                    if nxt < g:  # more frames before the next needle: those like this one in one go
                        at, k, before = frame_run(buf, frames, fi + 1, nxt, g, seen)
                        if before is not None:
                            self._frame = (before[0], before[1], buf[before[2]:line_end(buf, before[2], end)[0]])
                            cursor, fi = at, k
                    continue
                self._line_no = self._number(buf, s)
                self._on_progress(ProgressReading(done, total, frame_unit(buf, f, e)), self._line_no, events)
                self._settle_raw(self._line_no, buf[s:min(e, s + LINE_CAP)], events)
                touched = True
                continue
            self._line_no = self._number(buf, s)
            prev_raw, prev_cr = self._prev_line(buf, start, s)
            checked = self._funnel_state() == state
            self._examine(buf[s:cap], self._line_no, ending_at(buf, e, end), prev_raw, prev_cr, checked,
                          events)
            touched = True
        self._nl = self._number(buf, end) - 1
        self._anchor = 0
        self._mid = buf[end - 1] == _CR
        self._prev_raw, self._prev_cr = self._prev_line(buf, start, end)
        if self._frame is not None:
            done, total, tail = self._frame
            self._progress = ProgressReading(done, total, frame_unit(tail, 0, len(tail)))
            self._frame = None

