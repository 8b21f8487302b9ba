"""The meaning of a line: what each examined line does to the phase, progress, tracebacks and verdict.

``LineRules`` is the half of ``LogParser`` that knows vLLM; the other half (``parser.py``) moves through
the bytes and decides which lines are worth examining.  Every rule here is guarded by a needle of the
funnel (``funnel.py``), so a line holding none of them is a no-op and may be skipped unread.  How a line or a
traceback weighs in the verdict (cause, symptom, evidence) is ``weighing.py``; what it says of the phase and
progress, ``phaserules.py``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from orchestrator.logparse import native
from orchestrator.logparse.events import (
    ErrorSeen,
    LogEvent,
)
from orchestrator.logparse.evidence import Evidence
from orchestrator.logparse.funnel import FAILED_FOR_REQUEST_NEEDLE, Funnel, build_funnel
from orchestrator.logparse.lines import Ending, decode
from orchestrator.logparse.phaserules import PhaseRules
from orchestrator.logparse.phases import (
    Phase,
    ProgressReading,
    ShardReading,
)
from orchestrator.logparse.prefixes import (
    MAIN,
    WORKERS,
    ParsedLine,
    glued_header,
    head_of,
    multiprocessing_header,
    parse_line,
    prefix_only,
    sglang_place,
)
from orchestrator.logparse.repeats import Repeats
from orchestrator.logparse.signatures import Catalogue, Signature, load_catalogue
from orchestrator.logparse.tbfacts import (
    after_frame,
    cut_exception_line,
    cut_in_frames,
    cut_in_ipython_frames,
    failed_statement,
    framed_below,
)
from orchestrator.logparse.tbforms import (
    IPYTHON_FRAME,
    debugger_exception,
    is_ipython_header,
    is_remote_exception,
    is_rust_panic,
)
from orchestrator.logparse.tbtext import (
    is_bare_exception,
    is_cut_frame_line,
    is_cut_header,
    is_frame_line,
    is_header,
)
from orchestrator.logparse.tracebacks import TracebackAssembler
from orchestrator.logparse.weighing import CALL_FAILED, ERROR_LINE, REQUEST_HANDLER

#: A frame's source line raising an exception, indented or with its indentation lost.
_RAISE = re.compile(r"\s*raise [A-Za-z_][\w.]*\(")
_RAISING = re.compile(r"\s+raise [A-Za-z_]")  # (cut anywhere after the name's first letter)
_FRAME_REACH = 5  # lines from a flattened frame line to the exception line it may be the last frame of
_CPP_FRAME = re.compile(r"frame #\d+: ")
_VLLM_RECORD = re.compile(r"CRITICAL \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+\.py:\d+\]")


class LineRules(PhaseRules):
    """Semantic state of a log and the rules that update it, one examined line at a time."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self._cat = catalogue or load_catalogue()
        self._match = self._cat.matcher(native.available())
        worker_exception = self._cat.by_id("worker_exception")
        self._worker_exception: tuple[Signature, ...] = () if worker_exception is None else (worker_exception,)
        critical = self._cat.by_id("critical_record")
        self._critical: tuple[Signature, ...] = () if critical is None else (critical,)
        self._funnel: Funnel = build_funnel(self._cat)
        self._tbs = TracebackAssembler()
        self._tb_sigs: dict[str, list[str]] = {}
        self._ev = Evidence()
        self._phase = Phase.STARTING
        self._reported = Phase.STARTING
        self._shards: ShardReading | None = None
        self._progress: ProgressReading | None = None
        self._serving_seen = False  # a server's marker came (not only progress bars: an offline job runs too)
        self._progress_key_seen: list[int] | None = None
        self._frame: tuple[int, int, bytes] | None = None  # a frame read on the fast path, not yet kept
        self._sigs: dict[str, list[int]] = {}
        self._root_key: list[Any] | None = None
        self._weights_s: float | None = None
        self._errors = 0
        self._first_error_at: int | None = None  # the first error line, of whatever kind
        self._dirty = False
        self._call_failed_at: dict[str, int] = {}  # writer -> line of its last announcement of one call's failure
        self._asgi_at: dict[str, int] = {}  # writer -> line of its last ``Exception in ASGI application``
        self._request_tbs: list[str] = []  # writers whose open traceback is one request's failure
        self._repeats = Repeats()  # tracebacks per writer and place: failures lived with
        self._handled_at: dict[str, int] = {}  # writer -> line of a record whose traceback it lives with
        self._aborted_at: int | None = None  # a C++ terminate: its what() line, and its process, may follow
        self._pytest_at: list[int] | None = None  # pytest's E lines: more of the exception's text may follow
        self._frame_at: list[Any] | None = None  # [writer, line] of the last frame line outside a traceback
        self._head: str | None = None  # the text before the message of the line being classified
        self._last_word: list[Any] | None = None  # [line, *ParsedLine] of an exception line standing alone
        self._cut_header: list[Any] | None = None  # [line, *ParsedLine] of a line ending in a header cut short
        self._framed = False  # a frame line was read outside a traceback (``_reported_by_executor``)
        self._loose_frame: list[Any] | None = None  # [line, process, writer, text, record]: a frame line outside one

    def _rules_state(self) -> dict[str, Any]:
        """The JSON-able semantic state (part of ``LogParser.snapshot``)."""
        return {
            "tbs": self._tbs.to_dict(),
            "tb_sigs": {k: list(v) for k, v in self._tb_sigs.items()},
            "evidence": self._ev.to_dict(),
            "phase": self._phase.value,
            "reported": self._reported.value,
            "shards": None if self._shards is None else [
                self._shards.done, self._shards.total, self._shards.rate_per_s, self._shards.eta_s],
            "progress": None if self._progress is None else [
                self._progress.done, self._progress.total, self._progress.unit],
            "progress_key": self._progress_key_seen,
            "sigs": {k: list(v) for k, v in self._sigs.items()},
            "root_key": self._root_key,
            "weights_s": self._weights_s,
            "errors": self._errors,
            "first_error_at": self._first_error_at,
            "asgi": dict(self._call_failed_at),  # the key of snapshots written before it was renamed
            "asgi_at": dict(self._asgi_at),
            "request_tbs": list(self._request_tbs),
            "repeats": self._repeats.to_dict(),
            "handled_at": dict(self._handled_at),
            "aborted_at": self._aborted_at,
            "pytest_at": self._pytest_at,
            "frame_at": self._frame_at,
            "serving_seen": self._serving_seen,
            "last_word": self._last_word,
            "cut_header": self._cut_header,
            "loose_frame": self._loose_frame,
            "framed": self._framed,
        }

    def _load_rules_state(self, snap: dict[str, Any]) -> None:
        self._tbs = TracebackAssembler.from_dict(snap["tbs"])
        self._tb_sigs = {k: list(v) for k, v in snap["tb_sigs"].items()}
        self._ev = Evidence.from_dict(dict(snap["evidence"]))
        self._phase = Phase(snap["phase"])
        self._reported = Phase(snap["reported"])
        self._shards = None if snap["shards"] is None else ShardReading(*snap["shards"])
        prog = snap["progress"]
        self._progress = None if prog is None else ProgressReading(int(prog[0]), int(prog[1]), str(prog[2]))
        self._progress_key_seen = snap["progress_key"]
        self._sigs = {k: list(v) for k, v in snap["sigs"].items()}
        self._root_key = snap["root_key"]
        self._weights_s = snap["weights_s"]
        self._errors = int(snap["errors"])
        self._first_error_at = snap.get("first_error_at")
        self._call_failed_at = {str(k): int(v) for k, v in snap.get("asgi", {}).items()}
        self._asgi_at = {str(k): int(v) for k, v in snap.get("asgi_at", {}).items()}
        self._request_tbs = [str(k) for k in snap.get("request_tbs", [])]
        self._repeats = Repeats.from_dict(snap.get("repeats"))
        self._handled_at = {str(k): int(v) for k, v in snap.get("handled_at", {}).items()}
        self._aborted_at = snap.get("aborted_at", snap.get("terminate_line"))  # (the key's older name)
        self._frame_at = snap.get("frame_at")
        self._pytest_at = snap.get("pytest_at")
        self._serving_seen = bool(snap.get("serving_seen", False))
        self._last_word = snap.get("last_word")
        self._cut_header = snap.get("cut_header")
        self._framed = bool(snap.get("framed", False))
        self._loose_frame = snap.get("loose_frame")

    def _funnel_state(self) -> tuple[Phase, bool, bool]:
        """What decides which needles are relevant: phase, clean end seen, an error line pending or a traceback
        logged while serving waiting for a request answered (both look for signs of life)."""
        return self._phase, self._ev.stop_line is not None, self._ev.pending_error() or bool(self._ev.served)

    def _general(self, raw: bytes) -> bool:
        return self._funnel.is_candidate(raw, self._funnel.relevant(*self._funnel_state()))

    def _examine(self, raw: bytes, line_no: int, ending: Ending, prev_raw: bytes | None, prev_cr: bool,
                 checked: bool, events: list[LogEvent]) -> None:
        """One complete line.  ``checked``: the caller knows it holds a relevant (non-progress) needle."""
        tb_open = self._tbs.any_open()
        if not tb_open and not (checked or self._general(raw)):
            self._progress_rule(raw, line_no, events)
            self._settle_raw(line_no, raw, events)
            return
        inherited = None
        if prev_cr and prev_raw is not None and b"pid=" in prev_raw:
            inherited = prefix_only(decode(prev_raw))
        text = decode(raw)
        line = parse_line(text, inherited)
        if tb_open:
            consumed, done = self._tbs.feed(line, line_no, ending)
            if consumed:
                self._traceback_line(line, line_no, events)
            for tb in done:
                self._on_traceback(tb, events)
            if consumed:
                self._settle(line_no, line.message, events)
                return
            for tb in self._tbs.close_stale(line_no, line.key):
                self._on_traceback(tb, events)
            if not self._general(raw):
                self._progress_rule(raw, line_no, events)
                self._settle(line_no, line.message, events)
                return
        self._head = None if inherited is not None else head_of(raw, text, line.message)
        self._classify(line, line_no, ending, prev_raw, events)
        self._progress_rule(raw, line_no, events)
        self._settle(line_no, line.message, events)

    def _classify(self, line: ParsedLine, line_no: int, ending: Ending, prev_raw: bytes | None,
                  events: list[LogEvent]) -> None:
        msg = line.message
        if msg[:1] == ">" and is_bare_exception(msg.lstrip("> ")):
            # A Markdown quote's first line, the lines after it unmarked (a lazy continuation): what it quotes.
            line = dataclasses.replace(line, message=msg.lstrip("> "))
            msg = line.message
        if is_header(msg) or is_ipython_header(msg):
            self._open(line, line_no, ending, prev_raw, events)
            return
        if "Traceback (" in msg and is_cut_header(msg):  # the log may end there (``_last_words``)
            self._cut_header = [line_no, line.process, line.pid, line.level, line.record, msg]
        debugged = debugger_exception(msg)
        if debugged is not None:
            for tb in self._tbs.start_debugger(line, line_no, debugged):
                self._on_traceback(tb, events)
            self._tb_sigs[line.key] = []
            return
        if is_rust_panic(msg):
            for tb in self._tbs.start_panic(line, line_no, ending):
                self._on_traceback(tb, events)
            self._tb_sigs[line.key] = []
            return
        if is_remote_exception(msg):
            # Ray's wrapper of a remote worker's exception, its header cut off: the worker's frames follow.
            for tb in self._tbs.start_remote(line, line_no, ending):
                self._on_traceback(tb, events)
            self._tb_sigs[line.key] = []
            return
        if msg.startswith('File "') and is_frame_line(msg):
            self._frame_at = [line.key, line_no]  # a frame line (a record's, or a paste's) with its indentation lost
        if ('File "' in msg and (is_frame_line(msg.lstrip()) or is_cut_frame_line(msg.strip()))) or (
                msg[:1] in "FC" and IPYTHON_FRAME.match(msg)) or (
                line.level == "ERROR" and msg[:1] == " " and _RAISING.match(msg) is not None):
            # (one the log may end at, IPython's too, or the ``raise`` statement under one, logged as an error
            # record: ``_last_words``)
            self._loose_frame = [line_no, line.process, line.key, msg.strip()[:4096], line.record]
            self._framed = True
        if cut_exception_line(line, prev_raw, line_no, self._frame_above(line.key, line_no)):
            self._headless(line, line_no, ending, prev_raw, events)
            return
        if line.level is None and ": " in msg and is_bare_exception(msg):  # last words, if no text follows (finish)
            self._last_word = [line_no, line.process, line.pid, line.level, line.record, msg]
        if "Exception in ASGI application" in msg:
            self._call_failed_at[line.key] = self._asgi_at[line.key] = line_no
        elif "ethod " in msg and CALL_FAILED.search(msg):
            self._call_failed_at[line.key] = line_no
        elif FAILED_FOR_REQUEST_NEEDLE in msg:
            self._one_request_failed(line, line_no)
        if self._aborted_at is not None:
            self._after_terminate(msg, line_no)
        if self._pytest_at is not None:
            self._pytest_more(msg, line_no)
        # A C++ backtrace's frame (``frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c``) names
        # functions, not what went wrong: the message above or below it does.
        # Nor does a frame's source line (``    raise RuntimeError("Engine core initialization failed. "``): the
        # exception line below it says what was raised.
        shown_source = msg.lstrip().startswith("raise ") and _RAISE.match(msg) is not None
        sigs = () if shown_source or (msg.startswith("frame #") and _CPP_FRAME.match(msg)) else self._match(msg)
        is_error = line.level == "ERROR" or (line.level is None and (msg.startswith(("Error: ", "CUDA Error: ")) or "ERROR" in msg
                                                                      and ERROR_LINE.match(msg) is not None))
        if is_error and not sigs and "[dump_input.py:" in (line.record or ""):
            is_error = False  # the body of the engine's input dump (its config, the batch): ``input_dump`` says it
        elif is_error and not sigs and self._reported_by_executor(line, line_no):
            sigs = self._worker_exception
        elif line.level == "CRITICAL" and not sigs and _VLLM_RECORD.match(line.record or "") is not None:
            sigs, is_error = self._critical, True  # vLLM's CRITICAL record: its process is going down
        for sig in sigs:
            self._count(sig, line_no, line.process, events)
            if sig.handled:
                self._handled_at[line.key] = line_no
        if is_error:
            self._errors += 1
            if self._first_error_at is None:
                self._first_error_at = line_no
            events.append(ErrorSeen(line_no, line.process, msg[:2000]))
        if sigs or is_error:
            self._weigh_line(line, line_no, sigs, is_error)
        self._phase_rules(msg, line_no, events, is_error, line.process)

    def _open(self, line: ParsedLine, line_no: int, ending: Ending, prev_raw: bytes | None,
              events: list[LogEvent]) -> None:
        """A traceback's header: the traceback opens (closing its writer's open one)."""
        msg = line.message
        at = glued_header(msg) if not msg.startswith("Traceback") else None
        if at is not None:  # the header of another writer, glued to a progress bar's last frame
            line, self._head = parse_line(msg[at:]), None
        process = line.process
        if line.pid is None and prev_raw is not None:
            process = multiprocessing_header(decode(prev_raw)) or process
        if process == MAIN and line.pid is None:  # SGLang's ``[ts TP4] Scheduler hit an exception: Traceback``
            process = sglang_place(line.record) or process
        for tb in self._tbs.start(line, line_no, process, ending, self._head):
            self._on_traceback(tb, events)
        self._tb_sigs[line.key] = []
        self._mark_request(line, line_no)

    def _headless(self, line: ParsedLine, line_no: int, ending: Ending, prev_raw: bytes | None,
                  events: list[LogEvent]) -> None:
        """A traceback whose header was cut off (a pasted tail, or only its exception line pasted): its exception
        line still names the cause."""
        frames = self._ev.absorb_frames(line.process, line_no)
        framed = line.record is not None and after_frame(line, prev_raw)
        for tb in self._tbs.start_headless(line, line_no, ending, failed_statement(line, prev_raw, frames), framed,
                                           frames):
            self._on_traceback(tb, events)
        self._tb_sigs[line.key] = []
        self._mark_request(line, line_no)
        self._traceback_line(line, line_no, events)

    def _last_words(self, tail: list[str], events: list[LogEvent]) -> None:
        """At the log's end (``tail``: its last lines with text, ``LogTail``): an exception line standing alone (no
        header, no frame above it) that is the last is what the process died of, as Python prints that last (a
        paste of a tail: ``collect2: error: ld returned 1 exit status``, then ``subprocess.CalledProcessError:
        ...``), or the last but for the frame Databricks prints below it (``framed_below``).  A log that ends at a
        frame line outside any traceback, or the source line under it (IPython's: its context lines), with no cause
        before (a paste of frames, its header and exception line cut): a traceback cut before its exception line."""
        shown = tail[-4:]
        word = self._last_word
        if word is not None and not self._tbs.any_open() and (
                str(word[5])[:200] in (shown[-1] if shown else "") or framed_below(str(word[5]), tail)):
            self._headless(ParsedLine(*word[1:]), int(word[0]), Ending.EOF, None, events)
            for tb in self._tbs.close_all():
                self._on_traceback(tb, events)
            return
        head = self._cut_header
        if head is not None and not self._tbs.any_open() and str(head[5])[:200] in (shown[-1] if shown else ""):
            # A log that ends in a traceback's header, cut (``Scheduler hit an exception: Traceback (most``): a
            # traceback cut before its frames.
            self._open(ParsedLine(*head[1:]), int(head[0]), Ending.EOF, None, events)
            for tb in self._tbs.close_all():
                self._on_traceback(tb, events)
            return
        frame = self._loose_frame
        if frame is not None and (self._ev.root_item() is None or (
                self._phase.rank < Phase.SERVING.rank and self._ev.only_error_lines_of(str(frame[1]))
                and REQUEST_HANDLER.search(str(frame[4] or "")) is None)):
            # (error records of the process the frames are of, before any serving and not a request handler's: the
            # traceback's own lines, as a process that logs an exception writes each of them, the paste cut above
            # and below them)
            text = str(frame[3])
            cut = (cut_in_ipython_frames(frame, tail) if IPYTHON_FRAME.match(text) else cut_in_frames(frame, shown))
            if cut is not None:
                self._ev.error_lines.clear()
                self._on_traceback(cut, events)

    def _reported_by_executor(self, line: ParsedLine, line_no: int) -> bool:
        """Whether ``line`` is a line of a worker's exception as vLLM's executor reports it (``WorkerProc hit an
        exception.``, then each line of it headed ``[multiproc_executor.py:N]``; every such record of a worker is
        one) outside any traceback read: an excerpt of its message, header and exception line cut (an NPU kernel's
        ``Check ... failed`` lines).  Not a frame's line (a caret line, a frame line, the source line under one)."""
        record = line.record
        if record is None or "multiproc_executor.py:" not in record or not line.process.startswith(WORKERS):
            return False
        text = line.message.strip()
        if not text or text.strip("^~") == "" or is_frame_line(text):
            return False
        # Frames shown outside a traceback (workers' tracebacks interleaved, a paste begun in their frames): the
        # workers' lines are of those tracebacks, read without their headers (a source line, a message's line).
        return not self._framed and not self._frame_above(line.key, line_no)

    def _frame_above(self, key: str, line_no: int) -> bool:
        """Whether ``key`` logged a frame line (``File "...", line N``, flattened) just above ``line_no``: its
        source line (a statement over lines: some) and caret lines may stand between it and the exception line."""
        at = self._frame_at
        return at is not None and at[0] == key and 0 < line_no - int(at[1]) <= _FRAME_REACH
