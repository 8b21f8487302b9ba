"""``LogParser``: bytes in (any chunking), events and a verdict out.

The parser keeps a byte offset and a line count, the pending partial line (capped), and the semantic state.
Complete lines are handled in large regions: the funnel finds the few lines holding a needle and only those
are decoded; while a traceback is open every line is read, since traceback lines carry no needle.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.logparse.analysis import Analysis, Evidence, SignatureCount
from orchestrator.logparse.events import (
    ErrorSeen,
    LogEvent,
    PhaseChanged,
    ProgressReported,
    RootCause,
    RootCauseFound,
    ShardsProgressed,
    SignatureMatched,
    TracebackCompleted,
)
from orchestrator.logparse.funnel import Funnel, build_funnel
from orchestrator.logparse.lines import (
    LINE_CAP,
    Ending,
    count_terminators,
    decode,
    ending_at,
    line_end,
)
from orchestrator.logparse.phases import (
    CLEAN_NEEDLES,
    CLEAN_RE,
    MARKERS,
    PROGRESS_RE,
    SHARD_NEEDLES,
    Phase,
    ProgressReading,
    ShardReading,
    frame_at,
    frame_unit,
    read_progress,
    read_shards,
)
from orchestrator.logparse.prefixes import (
    ParsedLine,
    multiprocessing_header,
    parse_line,
    prefix_only,
    quick_key,
)
from orchestrator.logparse.signatures import Catalogue, Severity, Signature, load_catalogue
from orchestrator.logparse.tracebacks import Traceback, TracebackAssembler, is_header

SNAPSHOT_VERSION = 1
#: The funnel scans a region in windows: small first (phases change early in a log), doubling after.
_WINDOW = 512 * 1024
_MAX_WINDOW = 16 * 1024 * 1024
_PREV_CAP = 256
_LF, _CR = 0x0A, 0x0D
_ERROR_LINE = re.compile(r"^(?:\[\d\d:\d\d:\d\d\])?\s*ERROR\b:?\s*")
_EXC_LINE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)):?\s?(?P<msg>.*)$")
_WEIGHTS = re.compile(r"Loading weights took (?P<s>[\d.]+)")


class LogParser:
    """Incremental parser of one job's log; see the module doc of ``orchestrator.logparse``."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self._cat = catalogue or load_catalogue()
        self._funnel: Funnel = build_funnel(self._cat)
        # stream
        self._offset = 0
        self._line_no = 0
        self._skip_lf = False
        self._pending = b""
        self._pending_len = 0
        self._prev_raw: bytes | None = b""
        self._prev_cr = False
        # meaning
        self._tbs = TracebackAssembler()
        self._tb_sigs: dict[str, list[str]] = {}
        self._ev = Evidence()
        self._phase = Phase.STARTING
        self._reported = Phase.STARTING
        self._shards: ShardReading | None = None
        self._progress: ProgressReading | None = None
        self._progress_key_seen: list[int] | None = None
        self._frame: tuple[int, int, bytes] | None = None  # a frame read on the fast path, not yet kept
        self._sigs: dict[str, list[int]] = {}
        self._root_key: list[Any] | None = None
        self._weights_s: float | None = None
        self._errors = 0
        self._dirty = False
        self._window = _WINDOW  # scan window of the funnel (a speed setting, not state)

    # --- public API ----------------------------------------------------------------------------------------

    @property
    def line_end_offset(self) -> int:
        """Bytes consumed up to and including the last line terminator seen."""
        return self._offset

    def feed(self, chunk: bytes) -> list[LogEvent]:
        """Consume ``chunk``; events for the lines it completed."""
        events: list[LogEvent] = []
        buf = bytes(chunk)
        size = len(buf)
        pos = 0
        if size and self._skip_lf:
            self._skip_lf = False
            if buf[0] == _LF:
                pos = 1
                self._offset += 1
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
        if self._pending_len:
            self._line_no += 1
            self._offset += self._pending_len
            raw = self._pending
            self._pending, self._pending_len = b"", 0
            self._examine(raw, self._line_no, Ending.EOF, self._prev_raw, self._prev_cr, False, events)
            self._prev_raw, self._prev_cr = (raw if len(raw) <= _PREV_CAP else None), False
        for tb in self._tbs.close_all():
            self._on_traceback(tb, events)
        self._settle(self._line_no, "", events)
        return events

    def analysis(self) -> Analysis:
        """The verdict as of everything fed so far."""
        sigs = sorted(self._sigs.items(), key=lambda kv: (kv[1][1], kv[0]))
        rc = self._ev.root_cause()
        return Analysis(
            phase=self._effective_phase(),
            shards=self._shards,
            failed=self._ev.failed(),
            root_cause=rc,
            signatures=tuple(SignatureCount(k, v[0], v[1]) for k, v in sigs),
            lines=self._line_no,
            bytes=self._offset + self._pending_len,
            progress=self._progress,
            weights_load_s=self._weights_s,
            errors=self._errors,
        )

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state as of ``line_end_offset`` (the pending partial line is not included)."""
        return {
            "v": SNAPSHOT_VERSION,
            "offset": self._offset,
            "line_no": self._line_no,
            "skip_lf": self._skip_lf,
            "prev": None if self._prev_raw is None else self._prev_raw.decode("latin-1"),
            "prev_cr": self._prev_cr,
            "tbs": self._tbs.to_dict(),
            "tb_sigs": {k: list(v) for k, v in self._tb_sigs.items()},
            "evidence": self._ev.to_dict(),
            "phase": self._phase.value,
            "reported": self._reported.value,
            "shards": None if self._shards is None else list(_shard_tuple(self._shards)),
            "progress": None if self._progress is None else [
                self._progress.done, self._progress.total, self._progress.unit],
            "progress_key": self._progress_key_seen,
            "sigs": {k: list(v) for k, v in self._sigs.items()},
            "root_key": self._root_key,
            "weights_s": self._weights_s,
            "errors": self._errors,
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], catalogue: Catalogue | None = None) -> LogParser:
        """A parser that continues as if the bytes before ``snap['offset']`` had been fed."""
        if snap.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unsupported log parser snapshot version {snap.get('v')!r}")
        p = cls(catalogue)
        p._offset = int(snap["offset"])
        p._line_no = int(snap["line_no"])
        p._skip_lf = bool(snap["skip_lf"])
        p._prev_raw = None if snap["prev"] is None else str(snap["prev"]).encode("latin-1")
        p._prev_cr = bool(snap["prev_cr"])
        p._tbs = TracebackAssembler.from_dict(snap["tbs"])
        p._tb_sigs = {k: list(v) for k, v in snap["tb_sigs"].items()}
        p._ev = Evidence.from_dict(dict(snap["evidence"]))
        p._phase = Phase(snap["phase"])
        p._reported = Phase(snap["reported"])
        p._shards = None if snap["shards"] is None else ShardReading(*snap["shards"])
        prog = snap["progress"]
        p._progress = None if prog is None else ProgressReading(int(prog[0]), int(prog[1]), str(prog[2]))
        p._progress_key_seen = snap["progress_key"]
        p._sigs = {k: list(v) for k, v in snap["sigs"].items()}
        p._root_key = snap["root_key"]
        p._weights_s = snap["weights_s"]
        p._errors = int(snap["errors"])
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
        self._line_no += 1
        ending = Ending.CR if buf[t] == _CR else Ending.LF
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

    def _scan_region(self, buf: bytes, start: int, end: int, events: list[LogEvent]) -> None:
        """Handle the complete lines in ``buf[start:end]`` (``end`` is just past a terminator).

        Two sorted hit lists are merged on the fly: ``general`` (needles) and ``frames`` (tqdm marks).  A line
        holding only frames takes the cheap progress path.  ``self._line_no`` counts the lines before
        ``counted``; terminators are counted lazily, only up to lines that need a number.
        """
        state = (self._phase, self._ev.clean_line is not None)
        relevant = self._funnel.relevant(*state)
        general: list[int] | None = None
        frames: list[int] = []
        gi = fi = 0
        window, w_end = self._window, start
        cursor = counted = start
        rfind, find = buf.rfind, buf.find
        while cursor < end:
            if self._tbs.any_open():
                self._line_no += count_terminators(buf, counted, cursor)
                cursor = counted = self._slow(buf, start, cursor, end, events)
                continue
            if general is None or cursor >= w_end:
                # Scan a window (growing while nothing changes): a state change only rescans its rest.
                w_end = _line_start_after(buf, min(end, cursor + window), end)
                general = self._funnel.scan(buf, cursor, w_end, relevant)
                frames = self._funnel.scan_progress(buf, cursor, w_end)
                gi = fi = 0
                window = self._window = min(window * 2, _MAX_WINDOW)
            while gi < len(general) and general[gi] < cursor:
                gi += 1
            while fi < len(frames) and frames[fi] < cursor:
                fi += 1
            g = general[gi] if gi < len(general) else w_end
            f = frames[fi] if fi < len(frames) else w_end
            p = g if g <= f else f
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
                        and not self._progress_moves_phase()):
                    self._frame = (done, total, buf[f:e])  # the latest reading, built at the end
                    continue
                self._line_no += count_terminators(buf, counted, s) + 1
                counted = nxt
                self._on_progress(ProgressReading(done, total, frame_unit(buf, f, e)), self._line_no, events)
                self._settle(self._line_no, "", events)
                continue
            self._line_no += count_terminators(buf, counted, s) + 1
            counted = nxt
            prev_raw, prev_cr = self._prev_line(buf, start, s)
            checked = (self._phase, self._ev.clean_line is not None) == state
            self._examine(buf[s:cap], self._line_no, ending_at(buf, e, end), prev_raw, prev_cr, checked,
                          events)
            if (self._phase, self._ev.clean_line is not None) != state:
                # Fewer needles are relevant now: rescan the rest of the region with the smaller set.
                state = (self._phase, self._ev.clean_line is not None)
                relevant = self._funnel.relevant(*state)
                general, window = None, _WINDOW
                self._window = window
        self._line_no += count_terminators(buf, counted, end)
        self._prev_raw, self._prev_cr = self._prev_line(buf, start, end)
        if self._frame is not None:
            done, total, tail = self._frame
            self._progress = ProgressReading(done, total, frame_unit(tail, 0, len(tail)))
            self._frame = None

    def _slow(self, buf: bytes, region: int, cursor: int, end: int, events: list[LogEvent]) -> int:
        """Read every line while a traceback is open; returns where the fast path may resume."""
        prev_raw, prev_cr = self._prev_line(buf, region, cursor)
        while cursor < end and self._tbs.any_open():
            e, nxt = line_end(buf, cursor, end)
            self._line_no += 1
            raw = buf[cursor:min(e, cursor + LINE_CAP)]
            ending = ending_at(buf, e, end)
            key = None if prev_cr and prev_raw is not None and b"pid=" in prev_raw else quick_key(raw)
            if key is not None and not self._tbs.is_open(key) and not self._general(raw):
                # What _examine would do with a line of another writer holding no needle, without decoding.
                for tb in self._tbs.close_stale(self._line_no):
                    self._on_traceback(tb, events)
                self._progress_rule(raw, self._line_no, events)
                self._settle(self._line_no, "", events)
            else:
                self._examine(raw, self._line_no, ending, prev_raw, prev_cr, False, events)
            prev_raw = raw if e - cursor <= _PREV_CAP else None
            prev_cr = ending is Ending.CR
            cursor = nxt
        return cursor

    # --- meaning --------------------------------------------------------------------------------------------

    def _general(self, raw: bytes) -> bool:
        return self._funnel.is_candidate(raw, self._funnel.relevant(self._phase, self._ev.clean_line is not None))

    def _examine(self, raw: bytes, line_no: int, ending: Ending, prev_raw: bytes | None, prev_cr: bool,
                 checked: bool, events: list[LogEvent]) -> None:
        """One complete line.  ``checked``: the caller knows it holds a relevant (non-progress) needle."""
        tb_open = self._tbs.any_open()
        if not tb_open and not (checked or self._general(raw)):
            self._progress_rule(raw, line_no, events)
            self._settle(line_no, "", events)
            return
        inherited = None
        if prev_cr and prev_raw is not None and b"pid=" in prev_raw:
            inherited = prefix_only(decode(prev_raw))
        line = parse_line(decode(raw), inherited)
        if tb_open:
            consumed, done = self._tbs.feed(line, line_no, ending)
            if consumed:
                self._traceback_line(line, line_no, events)
            for tb in done:
                self._on_traceback(tb, events)
            if consumed:
                self._settle(line_no, line.message, events)
                return
            for tb in self._tbs.close_stale(line_no):
                self._on_traceback(tb, events)
            if not self._general(raw):
                self._progress_rule(raw, line_no, events)
                self._settle(line_no, line.message, events)
                return
        self._classify(line, line_no, prev_raw, events)
        self._progress_rule(raw, line_no, events)
        self._settle(line_no, line.message, events)

    def _classify(self, line: ParsedLine, line_no: int, prev_raw: bytes | None,
                  events: list[LogEvent]) -> None:
        msg = line.message
        if is_header(msg):
            process = line.process
            if line.pid is None and prev_raw is not None:
                process = multiprocessing_header(decode(prev_raw)) or process
            for tb in self._tbs.start(line, line_no, process):
                self._on_traceback(tb, events)
            self._tb_sigs[line.key] = []
            return
        sigs = self._cat.match(msg)
        for sig in sigs:
            self._count(sig, line_no, line.process, events)
        is_error = line.level == "ERROR" or (line.level is None and "ERROR" in msg
                                             and _ERROR_LINE.match(msg) is not None)
        if is_error:
            self._errors += 1
            events.append(ErrorSeen(line_no, line.process, msg[:2000]))
        if sigs or is_error:
            self._weigh_line(line, line_no, sigs, is_error)
        self._phase_rules(msg, line_no, events)

    def _weigh_line(self, line: ParsedLine, line_no: int, sigs: list[Signature], is_error: bool) -> None:
        msg = line.message
        for sig in sigs:
            ref = sig.referenced_message(msg)
            if ref is not None:
                self._ev.add_echo(ref)
        text = _ERROR_LINE.sub("", msg, count=1).strip() if is_error and line.level is None else msg.strip()
        exc: str | None = None
        m = _EXC_LINE.match(text)
        if m is not None:
            exc, text = m.group("exc"), m.group("msg").strip()
        causes = [s for s in sigs if s.severity is Severity.CAUSE]
        symptoms = [s for s in sigs if s.severity is Severity.SYMPTOM]
        warnings = [s for s in sigs if s.severity is Severity.WARNING]
        ranked = causes or symptoms
        first = ranked[0] if ranked else None
        cause = RootCause(exc, text[:4096], line.process, None, first.id if first else None, line_no,
                          first.hint if first else None)
        if causes:
            self._ev.add_line_cause(cause)
        elif symptoms:
            self._ev.add_symptom(cause)
        elif is_error and not warnings:
            self._ev.add_error_line(cause)
        self._dirty = True

    def _phase_rules(self, msg: str, line_no: int, events: list[LogEvent]) -> None:
        for marker in MARKERS:
            if (self._phase.rank < marker.phase.rank and any(n in msg for n in marker.needles)
                    and marker.pattern.search(msg)):
                if self._weights_s is None and (w := _WEIGHTS.search(msg)):
                    self._weights_s = float(w.group("s"))
                self._advance(marker.phase)
        if self._phase.rank < Phase.SERVING.rank and any(n in msg for n in SHARD_NEEDLES):
            shards = read_shards(msg)
            if shards is not None:
                if self._shards is None or _shard_tuple(shards)[:2] != _shard_tuple(self._shards)[:2]:
                    events.append(ShardsProgressed(shards.done, shards.total, shards.rate_per_s,
                                                   shards.eta_s, line_no))
                self._shards = shards
                self._advance(Phase.LOADING)
        if self._ev.clean_line is None and any(n in msg for n in CLEAN_NEEDLES) and CLEAN_RE.search(msg):
            self._ev.clean_line = line_no
            self._dirty = True

    def _progress_rule(self, raw: bytes, line_no: int, events: list[LogEvent]) -> None:
        if PROGRESS_RE.search(raw) is not None:
            reading = read_progress(raw)
            if reading is not None:
                self._on_progress(reading, line_no, events)

    @staticmethod
    def _progress_key(progress: ProgressReading) -> list[int]:
        done, total = progress.done, progress.total
        return [total, done * 100 // total if total else done, 1 if done >= total else 0]

    def _progress_moves_phase(self) -> bool:
        phase = self._phase
        return phase is Phase.STARTING or phase is Phase.LOADED or phase is Phase.SERVING

    def _on_progress(self, progress: ProgressReading, line_no: int, events: list[LogEvent]) -> None:
        self._frame = None
        key = self._progress_key(progress)
        if key != self._progress_key_seen:
            self._progress_key_seen = key
            events.append(ProgressReported(progress.done, progress.total, progress.unit, line_no))
        self._progress = progress
        if self._progress_moves_phase():
            self._advance(Phase.RUNNING)

    def _advance(self, phase: Phase) -> None:
        if phase.rank > self._phase.rank:
            self._phase = phase
            self._dirty = True

    def _count(self, sig: Signature, line_no: int, process: str, events: list[LogEvent]) -> None:
        entry = self._sigs.get(sig.id)
        if entry is None:
            self._sigs[sig.id] = [1, line_no]
        else:
            entry[0] += 1
        events.append(SignatureMatched(sig.id, sig.severity.value, sig.hint, line_no, process))

    def _traceback_line(self, line: ParsedLine, line_no: int, events: list[LogEvent]) -> None:
        sigs = self._cat.match(line.message)
        if not sigs:
            return
        found = self._tb_sigs.setdefault(line.key, [])
        for sig in sigs:
            self._count(sig, line_no, line.process, events)
            if sig.id not in found and len(found) < 16:
                found.append(sig.id)

    def _on_traceback(self, tb: Traceback, events: list[LogEvent]) -> None:
        events.append(TracebackCompleted(tb.process, tb.exception, tb.message, tb.text, tb.line_no))
        ids = self._tb_sigs.pop(tb.key, [])
        sigs = [s for s in (self._cat.by_id(i) for i in ids) if s is not None]
        chosen = next((s for s in sigs if s.severity is Severity.CAUSE), sigs[0] if sigs else None)
        first_exc = tb.exception_lines[0] if tb.exception_lines else ""
        for exc_line in tb.exception_lines:
            for sig in self._cat.signatures:
                ref = sig.referenced_message(exc_line)
                if ref is not None:
                    self._ev.add_echo(ref)
        cause = RootCause(tb.exception, tb.message, tb.process, tb.text, chosen.id if chosen else None,
                          tb.line_no, chosen.hint if chosen else None)
        symptom = any(s.severity is Severity.SYMPTOM and s.matches(first_exc) for s in self._cat.signatures)
        if tb.level in ("WARNING", "INFO", "DEBUG"):
            return
        if symptom:
            self._ev.add_symptom(cause)
        else:
            self._ev.add_traceback_cause(cause)
        self._dirty = True

    def _effective_phase(self) -> Phase:
        if self._ev.failed():
            return Phase.FAILED
        if self._ev.clean_line is not None:
            return Phase.STOPPED
        return self._phase

    def _settle(self, line_no: int, text: str, events: list[LogEvent]) -> None:
        """After a line: report a new phase or root cause."""
        if not self._dirty:
            return
        self._dirty = False
        phase = self._effective_phase()
        if phase is not self._reported:
            self._reported = phase
            events.append(PhaseChanged(phase, line_no, text.strip()[:500]))
        rc = self._ev.root_cause()
        key = None if rc is None else [rc.line_no, rc.process, rc.exception, rc.message[:200]]
        if key != self._root_key:
            self._root_key = key
            if rc is not None:
                events.append(RootCauseFound(rc, rc.line_no))


def _line_start_after(buf: bytes, pos: int, end: int) -> int:
    """The first line start at or after ``pos`` (``end`` when none)."""
    if pos >= end:
        return end
    if pos > 0 and buf[pos - 1] in (_LF, _CR) and not (buf[pos - 1] == _CR and buf[pos] == _LF):
        return pos
    lf = buf.find(b"\n", pos, end)
    cr = buf.find(b"\r", pos, lf if lf >= 0 else end)
    if cr >= 0:
        return cr + 2 if cr + 1 < end and buf[cr + 1] == _LF else cr + 1
    return lf + 1 if lf >= 0 else end


def _shard_tuple(s: ShardReading) -> tuple[int, int, float | None, float | None]:
    return (s.done, s.total, s.rate_per_s, s.eta_s)
