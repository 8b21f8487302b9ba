"""How examined lines and completed tracebacks weigh in the verdict: cause, symptom, evidence or nothing.

The half of ``LineRules`` that turns what a line or a traceback *is* into evidence (``analysis.Evidence``):
signatures decide first; a traceback that is a symptom, a stop (``SystemExit``, ``KeyboardInterrupt``), or
printed after an orderly stop began is a symptom; a traceback of the server front end while serving (an
error record, or uvicorn's ``Exception in ASGI application``), or one the engine logs for a utility call it
answers with the failure (``Invocation of wake_up method failed``: sleep mode, LoRA loading,
``collective_rpc``), is one request's failure, kept as pending evidence like a bare ``ERROR`` record; so is a
traceback the process caught and went on from: one its record says it lives with (``Failed to load plugin X``:
a ``handled`` signature), or one from a place some worker printed it from again and again (``repeats.py``).  A
C++ ``terminate called ...`` takes its message from the ``what():`` line after it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from orchestrator.logparse.events import LogEvent, RootCause, SignatureMatched, TracebackCompleted
from orchestrator.logparse.evidence import Evidence
from orchestrator.logparse.phases import Phase
from orchestrator.logparse.prefixes import WORKERS, ParsedLine
from orchestrator.logparse.repeats import Repeats, site
from orchestrator.logparse.rootchoice import SAME_BURST
from orchestrator.logparse.signatures import Catalogue, Severity, Signature
from orchestrator.logparse.tbfacts import chain_cut, failed_assert, sticky_step
from orchestrator.logparse.tbstate import Traceback

ERROR_LINE = re.compile(r"^(?:\[\d\d:\d\d:\d\d\])?\s*(?:ERROR\b:?|Error:)\s*")
_EXC_LINE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)|Exception(?=:|$)):?\s?(?P<msg>.*)$")
#: An exception named after what failed (``Failed to create instance: TypeError: 'NoneType' object ...``,
#: ``Error while finding module specification for 'vllm.x' (ModuleNotFoundError: No module named 'vllm')``).
_NAMED_AFTER = re.compile(r"(?:: |\()(?P<exc>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): \S")
#: pytest's short summary of a failed test: ``FAILED path::test[params] - json.decoder.JSONDecodeError: ...``, or
#: ``- assert not True`` for a bare ``assert`` (an ``AssertionError`` with no message: pytest shows the assertion).
_PYTEST_SUMMARY = re.compile(r" - (?:(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failed|Timeout))(?::|$)"
                             r"|(?P<bare>assert ))")
#: pytest's column in front of the lines of a failed test's exception (``E       AssertionError: ...``), indented
#: when a script quotes the report.
_PYTEST_E = re.compile(r"\s*E {3,}(?=\S)")
#: C++'s last words; ranks that die at once write theirs into each other's (``of 'c10::AcceleratorErrorterminate
#: called after throwing an instance of ''``, then ``  what():    what():  CUDA error: ...``).
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<exc>[^'\s]+?)(?:'|(?=terminate called))")
#: macOS's libc++ says the same with the exception's text on its line (``libc++abi: terminating due to uncaught exception
#: of type std::runtime_error: [METAL] Command buffer execution failed: ...``).
_LIBCXX_TERMINATE = re.compile(r"libc\+\+abi: terminating due to uncaught exception of type (?P<exc>\w+(?:::\w+)*)")
_WHAT = re.compile(r"^\s*(?:what\(\):\s*)+(?P<msg>.*)$")
#: The process title vLLM gives its processes, as a C++ backtrace's frames show it (``frame #9:
#: VLLM::Worker_TP4() [0x59dcbd]``), and how many lines after a ``terminate`` it is looked for.
_PROC_TITLE = re.compile(r"\bVLLM::(?P<proc>\w+)")
TITLE_WINDOW = 100
#: Terminate lines in a row (threads of one process, or several processes on one stderr) one what() line follows.
_TERMINATES = 8
#: ROCm's abort says what went wrong from its status on (``:0:rocdevice.cpp :3582: 1886160784284 us:  Callback:
#: Queue 0x7d08... Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed ...``).
_HSA_STATUS = re.compile(r"(?<=with error : )HSA_STATUS_ERROR_\w+")
#: An exception's text in a line that does not name it: an ``OSError``'s (``[Errno 122] Disk quota exceeded``; the
#: errno picks the subclass Python raises, PEP 3151: ``OSError(2, ...)`` is a ``FileNotFoundError``), or Python's
#: own wording of a built-in exception's message.  One search for all.
_UNNAMED = re.compile(r"\[Errno (?P<errno>\d+)\] \S"
                      r"|(?P<ZeroDivisionError>\b(?:integer |float )?division(?: or modulo)? by zero\b)"
                      r"|(?P<ModuleNotFoundError>(?:^|: )No module named '[\w.]+')"
                      r"|(?P<AttributeError>'[\w.]+' object has no attribute '\w+')"
                      r"|(?P<IndexError>\b(?:list|tuple|string) index out of range\b)")
#: Texts every match of ``_UNNAMED`` holds (its alternation, with no literal to start from, reads a long line in
#: tens of microseconds: these are looked for first).
_UNNAMED_NEEDLES = ("[Errno ", "by zero", "No module named '", " object has no attribute '", " index out of range")
_ERRNO_CLASS = {"2": "FileNotFoundError", "13": "PermissionError", "17": "FileExistsError",
                "104": "ConnectionResetError", "110": "TimeoutError", "111": "ConnectionRefusedError"}
#: The frame of vLLM V0's engine loop (``AsyncLLMEngine.run_engine_loop``) in a traceback.
_ENGINE_LOOP = ", in run_engine_loop"
#: Exceptions that say the process was told to stop (a signal), not that it failed.
_STOP_EXCEPTIONS = frozenset({"SystemExit", "KeyboardInterrupt", "asyncio.exceptions.CancelledError",
                              "asyncio.CancelledError", "CancelledError",
                              # torchrun's agent, told to stop (SIGTERM, SIGINT, SIGHUP: the signals it handles)
                              "torch.distributed.elastic.multiprocessing.api.SignalException", "SignalException"})
#: Lines after an orderly stop during which a traceback belongs to the shutdown (a log appended to by a later
#: run goes on to new failures).
STOP_WINDOW = 2000
#: Writers whose tracebacks while serving are one request's failure (the server answers it and serves on).
_FRONTENDS = frozenset({"APIServer", "main"})
#: vLLM's own engine-side processes (a request handler's record is never theirs); any other process logging from a
#: request handler hosts the server (a Ray actor: ``(PatchedvLLMServer pid=N)``).
_ENGINE_SIDE = ("EngineCore", "RayWorker", *WORKERS)
#: Frames of code the server runs only for a request: a tool-call or reasoning parser's.
_REQUEST_FRAMES = (", in extract_tool_calls", ", in extract_reasoning_content", ", in safe_apply_chat_template")
#: Frames of vLLM V1's output handler, the one task that reads every request's outputs from the engine and
#: detokenizes them: an exception there reaches each request (``raise output``) and ends the loop, so a request
#: handler's traceback through it is the server's failure, not that request's.
_OUTPUT_HANDLER = (", in output_handler", '/v1/engine/detokenizer.py", line ')
#: vLLM's answer to a request longer than the model's context: that request's failure, wherever it was logged,
#: unless it unwound a script to its top level (an offline script's ``llm.generate``: the script died of it).
_REQUEST_REJECTED = re.compile(r"(?:[\w.]+\.)?(?:ValueError|VLLMValidationError|BadRequestError): This model's "
                               r"maximum context length is \d+ tokens")
#: A process's word that one request failed (``Handshake failed for request chatcmpl-...``, ``Decode transfer failed
#: for request rank=0 ...``; found through ``funnel.FAILED_FOR_REQUEST_NEEDLE``), and how many lines after its
#: exception's last it may come.
_FAILED_FOR_REQUEST = re.compile(r"^[A-Z][\w ]{0,40} failed for request \S")
_REQUEST_REACH = 3
#: The record header of vLLM's OpenAI request handlers (``serving_chat.py``, ``serving_completion.py``,
#: ``serving_engine.py``, ...; ``chat_completion/serving.py`` since 0.17): they log a request's failure, then
#: answer it with an error.
REQUEST_HANDLER = re.compile(r"(?:^|[\s[])(?:serving(?:_\w+)?|api_router)\.py:\d+\]")
#: The engine's record of a utility call that failed: the caller gets the failure, the engine goes on.
#: A call failed and its caller goes on: vLLM's ``collective_rpc``, ms-swift's rollout server's request handler.
CALL_FAILED = re.compile(r"^(?:Invocation of \S+ method failed|Method execution failed: \S+)")


class EvidenceRules:
    """Weighing of lines and tracebacks; the state lives in ``LineRules`` (declared here for the type checker)."""

    _cat: Catalogue
    _match: Callable[[str], tuple[Signature, ...]]  # ``_cat.match``, its gate chosen once (``Catalogue.matcher``)
    _ev: Evidence
    _phase: Phase
    _serving_seen: bool
    _sigs: dict[str, list[int]]
    _tb_sigs: dict[str, list[str]]
    _call_failed_at: dict[str, int]  # writer -> line where it said one call failed (ASGI, utility call)
    _asgi_at: dict[str, int]  # writer -> line of uvicorn's "Exception in ASGI application" (one request's)
    _request_tbs: list[str]
    _repeats: Repeats
    _handled_at: dict[str, int]  # writer -> line of a record whose traceback it caught and lived with
    _aborted_at: int | None
    _pytest_at: list[int] | None  # [line, last line] of a failed test's exception, read from pytest's E lines
    _dirty: bool

    def _weigh_line(self, line: ParsedLine, line_no: int, sigs: tuple[Signature, ...], is_error: bool) -> None:
        msg = line.message
        for sig in sigs:
            ref = sig.referenced_message(msg)
            if ref is not None:
                self._ev.add_echo(ref)
        text = ERROR_LINE.sub("", msg, count=1).strip() if is_error and line.level is None else msg.strip()
        if "E   " in text[:8] and (pe := _PYTEST_E.match(text)) is not None:
            text = text[pe.end():]
        exc: str | None = None
        m = _EXC_LINE.match(text)
        if m is not None:
            exc, text = m.group("exc"), m.group("msg").strip()
            if text[:2] in ("('", '("') and text[-2:] == text[1] + ")" and len(text) > 4:
                text = text[2:-2]  # logged as ``repr(e)`` (V0's engine: ``RuntimeError('stack expects ...')``)
        elif text.startswith("FAILED ") and (p := _PYTEST_SUMMARY.search(text)) is not None:
            exc = p.group("exc") or "AssertionError"  # the text stays whole: it names the test
        elif (e := _NAMED_AFTER.search(text)) is not None:
            exc = e.group("exc")  # a record that quotes the exception after what failed: the text stays whole
        elif any(n in text for n in _UNNAMED_NEEDLES) and (e := _UNNAMED.search(text)) is not None:
            # its text, printed without its name
            n = e.group("errno")
            exc = str(e.lastgroup) if n is None else _ERRNO_CLASS.get(n, "OSError")
        causes = [s for s in sigs if s.severity is Severity.CAUSE]
        symptoms = [s for s in sigs if s.severity is Severity.SYMPTOM]
        warnings = [s for s in sigs if s.severity is Severity.WARNING]
        ranked = causes or symptoms or (warnings if is_error else [])
        first = ranked[0] if ranked else None
        t = _TERMINATE.search(text)
        if t is not None:  # the message is the ``what():`` line after it, when one comes (``amend_line_cause``)
            exc, text = t.group("exc"), text[t.start():]  # glued behind other output (a progress bar): from it
            self._aborted_at = line_no  # (its what() line, and its process when the line has no prefix)
        elif "libc++abi" in text and (t := _LIBCXX_TERMINATE.search(text)) is not None:
            exc, text = t.group("exc"), text[t.start():]
        elif "HSA_STATUS_ERROR_" in text and (h := _HSA_STATUS.search(text)) is not None:
            text = text[h.start():]
        cause = RootCause(exc, text[:4096], line.process, None, first.id if first else None, line_no,
                          first.hint if first else None)
        if first is not None and first.id == "pytest_exception":
            self._pytest_at = [line_no, line_no]  # its next E lines go on with its message
        if not causes and not symptoms and warnings and all(s.harmless for s in warnings):
            return  # a known-harmless error record (``Cannot use FA version 2``): neither cause nor evidence
        if self._ev.stall is None and (stalled := next((s for s in warnings if s.stalls), None)) is not None:
            self._ev.stall = dataclasses.replace(cause, signature=stalled.id, hint=stalled.hint).to_dict()
            self._dirty = True
            if not is_error:
                return
        stop = self._ev.stop_line
        if causes and all(s.ends_serving for s in causes) and self._serving_seen:
            # A server that ran until its job's time was up: stopped (the signature stays listed).  Before it
            # served, the time limit cut the start short, and in an offline job (progress bars, no server) it
            # cut the work: a failure.
            if stop is None:
                self._ev.stop_line = self._ev.clean_line = line_no
            self._dirty = True
            return
        if causes and stop is not None and 0 < line_no - stop <= STOP_WINDOW and all(s.after_stop for s in causes):
            self._ev.add_symptom(cause, True)  # killed after an orderly stop (its grace ran out): the stop's
        elif causes:
            if not any(s.after_cause for s in causes):
                # A process's death reported just before what killed it, told in its own last lines (Ray's raylet
                # line reaches the driver before the dead worker's): the report is that cause's symptom.
                self._ev.demote_line_causes(lambda item: 0 < line_no - int(item["line_no"]) <= SAME_BURST and (
                    (sig := self._cat.by_id(str(item.get("signature")))) is not None and sig.after_cause))
            self._ev.add_line_cause(cause, any(s.fatal for s in causes), all(s.lived_with for s in causes))
        elif symptoms:
            self._ev.add_symptom(cause, all(s.aftermath for s in symptoms))
            if self._ev.clean_line is None and self._ev.died_line is None and any(s.fatal for s in symptoms):
                self._ev.died_line = line_no  # the shutdown that may follow is the death's, not an orderly one
        elif is_error:
            # Evidence, not a failure: a pending error until the log shows the job going on (_sign_of_life).
            self._ev.add_error_line(cause)
        self._dirty = True

    def _pytest_more(self, msg: str, line_no: int) -> None:
        """A line after a failed test's first ``E`` line (``_pytest_at``): the next ``E`` line goes on with the
        exception's text (pydantic's ``Value error, ...``, an assertion's ``+  where ...``)."""
        at = self._pytest_at
        assert at is not None
        pe = _PYTEST_E.match(msg) if line_no == at[1] + 1 else None
        if pe is None or not self._ev.extend_line_cause(at[0], msg[pe.end():].rstrip(), 4096):
            self._pytest_at = None
            return
        at[1] = line_no
        self._dirty = True

    def _after_terminate(self, msg: str, line_no: int) -> None:
        """A line after a C++ ``terminate`` (``_aborted_at``): its ``what():`` line says what was thrown, and a
        frame of its backtrace names the process by the title vLLM gave it, when the line had no prefix."""
        at = self._aborted_at
        assert at is not None
        if line_no - at > TITLE_WINDOW:
            self._aborted_at = None
            return
        if line_no - at <= 3 and "what():" in msg and (m := _WHAT.match(msg)) is not None:
            # (once: it amends the terminate lines only; threads' terminates in a row share the what() after them)
            self._ev.amend_line_cause(at, m.group("msg").strip()[:4096], burst=_TERMINATES)
            self._dirty = True
        if "VLLM::" in msg and (t := _PROC_TITLE.search(msg)) is not None:
            self._ev.amend_line_process(at, t.group("proc"))
            self._aborted_at = None
            self._dirty = True

    def _count(self, sig: Signature, line_no: int, process: str, events: list[LogEvent]) -> None:
        entry = self._sigs.get(sig.id)
        if entry is None:
            self._sigs[sig.id] = [1, line_no]
        else:
            entry[0] += 1
        events.append(SignatureMatched(sig.id, sig.severity.value, sig.hint, line_no, process))

    def _traceback_line(self, line: ParsedLine, line_no: int, events: list[LogEvent]) -> None:
        sigs = self._match(line.message)
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
        for exc_line in tb.exception_lines if tb.joined else ():  # (one wrapped over lines, rich's, or a panic's)
            for sig in self._match(exc_line):
                if sig.id not in ids and len(ids) < 16:
                    ids.append(sig.id)
                    self._count(sig, tb.line_no, tb.process, events)
        sigs = [s for s in (self._cat.by_id(i) for i in ids) if s is not None]
        if sigs and all(s.harmless for s in sigs):
            return  # (a monitoring thread's ``psutil.NoSuchProcess``): neither cause nor evidence
        chosen = next((s for s in sigs if s.severity is Severity.CAUSE), sigs[0] if sigs else None)
        first_exc = tb.exception_lines[0] if tb.exception_lines else ""
        for exc_line in tb.exception_lines:
            for ref in self._cat.echo_refs(exc_line):
                self._ev.add_echo(ref)
        message = tb.message or failed_assert(tb)
        if message.rstrip(": ") == "AssertionError":  # a wrapper of a bare assertion: which statement failed
            stmt = failed_assert(tb)
            message = f"AssertionError: {stmt}" if stmt else message
        cause = RootCause(tb.exception, message, tb.process, tb.text,
                          chosen.id if chosen else None, tb.line_no, chosen.hint if chosen else None)
        symptom = self._cat.shows_symptom(first_exc)
        request = tb.key in self._request_tbs
        if request:
            self._request_tbs.remove(tb.key)
        elif tb.process in _FRONTENDS and any(f in tb.text for f in _REQUEST_FRAMES):
            request = True  # through code that runs only for a request (a tool-call parser): its failure
        elif _REQUEST_REJECTED.match(first_exc) is not None and ", in <module>" not in tb.text:
            request = True  # a request the server would not take, however it was pasted (not one a script died of)
        if request:
            # A request that failed because the engine had died of the exception its chain starts with
            # (``TypeError`` ... direct cause of ``AsyncEngineDeadError: Background loop has errored``): not one
            # request's trouble, the engine's death, told by the first request to meet it.
            # Nor is a CUDA error that sticks to the context, in a step a server caught and went on from (old
            # SGLang's model worker): every later step fails with it.
            request = not self._killed_engine(tb) and not sticky_step(tb) and not (
                chosen is not None and chosen.failed_before) and not any(f in tb.text for f in _OUTPUT_HANDLER)
            if not request and (chosen is None or chosen.severity is not Severity.CAUSE):
                cause = dataclasses.replace(cause, signature=None, hint=None)  # (the death's hint points above)
        if tb.level in ("WARNING", "INFO", "DEBUG"):
            return
        stop = self._ev.stop_line
        # A stop exception that led to another, cut off (``CancelledError``, then the timeout it became): not
        # a stop, and the exception shown is all the traceback says.  Nor is one request's (a client that went
        # away cancels its handler's task): that request failed, the server did not stop.
        told = tb.exception in _STOP_EXCEPTIONS and not chain_cut(tb) and not request
        if told and stop is None and not self._ev.wrong_so_far():
            # Told to stop (vLLM raises ``KeyboardInterrupt("terminated")`` on SIGTERM while it loads) with
            # nothing wrong before: an orderly stop, and what the stop makes the other processes print after
            # it is the shutdown's, not a failure.
            self._ev.stop_line = self._ev.clean_line = tb.line_no
            stop = tb.line_no
        # A death reported after a known cause's line (a worker's device-side assert, then Ray's "actor died"):
        # what that cause did.
        symptom = symptom or (chosen is not None and chosen.after_cause and bool(self._ev.line_causes))
        if symptom or told or (stop is not None and 0 < tb.line_no - stop <= STOP_WINDOW):
            # A consequence, a signal, or a traceback printed while the job was shutting down in order.
            self._ev.add_symptom(cause, symptom and self._aftermath_only(first_exc))
            if symptom and stop is None and self._ev.clean_line is None and self._ev.died_line is None and any(
                    s.fatal for s in self._match(first_exc)):
                # The engine died (``EngineDeadError`` raised in a request handler): the shutdown that follows
                # is the death's, not an orderly one.
                self._ev.died_line = tb.line_no
        elif request:
            # One request failed (answered 4xx); a failure only if nothing shows the server going on after it.
            self._ev.add_error_line(cause)
        elif self._lived_with(tb):
            # The same failure, at the same place, that some worker printed again and again and went on.
            self._ev.add_error_line(cause)
        else:
            self._ev.add_traceback_cause(cause)
            if tb.level is not None and self._phase.rank >= Phase.SERVING.rank and len(self._ev.served) < 64:
                self._ev.served.append(tb.line_no)  # caught and logged while serving: fatal unless it answers on
            if tb.process in _FRONTENDS and tb.level == "ERROR":
                self._ev.answerable = [tb.line_no, tb.end_line]
        self._dirty = True

    def _killed_engine(self, tb: Traceback) -> bool:
        """Whether ``tb``'s chain ends in the engine's death (a fatal symptom) raised from an exception before it,
        or it went through V0's engine loop (``run_engine_loop``: an exception there ends the loop for good)."""
        if self._cat.shows_symptom(tb.exception_lines[0] if tb.exception_lines else ""):
            return False  # (the death itself, told first: a symptom, weighed as one)
        if _ENGINE_LOOP in tb.text:
            return True
        return len(tb.exception_lines) > 1 and any(
            s.fatal and s.severity is Severity.SYMPTOM for s in self._match(tb.exception_lines[-1]))

    def _lived_with(self, tb: Traceback) -> bool:
        """Whether ``tb`` is an error its writer, or another, lived through (``repeats.py``); the earlier
        tracebacks from its place leave the causes when this one shows it."""
        place = site(tb.text)
        if place is None:
            return False
        if self._repeats.seen(tb.key, place):
            self._ev.demote(lambda item: site(str(item.get("traceback") or "")) == place)
        return place in self._repeats.survived

    def _one_request_failed(self, line: ParsedLine, line_no: int) -> None:
        """``Handshake failed for request ID`` (a KV connector's, a P/D transfer's) just after its writer's
        traceback or exception record: that exception was the one request's, caught; the process goes on."""
        if _FAILED_FOR_REQUEST.search(line.message) is None:
            return
        self._ev.demote(lambda item: item["process"] == line.process and 0 < line_no - int(item["line_no"]) - str(
            item.get("traceback") or "").count("\n") <= _REQUEST_REACH)
        self._dirty = True

    def _aftermath_only(self, text: str) -> bool:
        """Whether every symptom ``text`` shows is one of the teardown itself (a socket closed under a client)."""
        symptoms = [s for s in self._match(text) if s.severity is Severity.SYMPTOM]
        return bool(symptoms) and all(s.aftermath for s in symptoms)

    def _mark_request(self, line: ParsedLine, line_no: int) -> None:
        """A traceback that is the failure of one call: one a ``handled`` record announced just above it, one
        logged by the OpenAI server's request handlers
        (``[serving_chat.py:N]``: they run only for a request, so whatever the phase, in any process that hosts
        the server, and in a paste cut above the start-up), or, while serving, the front end's, logged as an error record or after
        uvicorn's ``Exception in ASGI application``, or any process's right after it said a utility call
        failed."""
        if line.message.startswith("EngineCore hit an exception"):
            return  # the engine core's own traceback (vLLM 0.8 prints it unprefixed, as the front end's lines)
        handled = self._handled_at.pop(line.key, None)
        if handled is not None and line_no - handled <= 3:
            # The record that announced it says the process goes on (``Failed to load plugin X``).
            if line.key not in self._request_tbs:
                self._request_tbs.append(line.key)
            return
        if (line.level == "ERROR" and line.record is not None and not line.process.startswith(_ENGINE_SIDE)
                and REQUEST_HANDLER.search(line.record) is not None):
            if line.key not in self._request_tbs:
                self._request_tbs.append(line.key)
            return
        said = self._call_failed_at.pop(line.key, None)
        announced = said is not None and line_no - said <= 3
        if announced and self._asgi_at.pop(line.key, None) == said:
            # uvicorn's ``Exception in ASGI application``: a request's, whatever the phase read so far (a paste
            # may start while the server serves).
            if line.key not in self._request_tbs:
                self._request_tbs.append(line.key)
            return
        if self._phase.rank < Phase.SERVING.rank:
            return  # (a utility call failing at start-up, ``collective_rpc`` at init, fails the start)
        if line.process not in _FRONTENDS and not announced:
            return
        if (line.level == "ERROR" or announced) and line.key not in self._request_tbs:
            self._request_tbs.append(line.key)
