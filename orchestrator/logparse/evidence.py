"""The evidence gathered while parsing a log, and the root cause chosen from it.

Evidence comes in tiers; the root cause is the earliest item of the best non-empty tier:

1. tracebacks that are not symptoms (a worker's ``AssertionError``, not the engine's ``Worker failed with
   error '...'`` echo, ``EngineDeadError`` or ``Engine core initialization failed``); when an echo quotes a
   message, the traceback with that message wins; one cut before its exception line yields to one that has it,
   to an error line naming an exception, to a known cause's line, or to a symptom above it that names a death
   or an exception;
2. lines matching a ``cause`` signature outside tracebacks (``Hidden-states write failed ...``);
3. other error lines (an ``ERROR`` record, a script's ``ERROR: <text>``, one request's traceback) still
   *pending*: no sign of life (a request answered below 500, a throughput line, progress, a phase marker)
   came after them; the first with a traceback when there is one;
4. symptoms (``Parent process exited``, ``WorkerProc shutting down``, ...), only when nothing above exists.

A log has failed when tiers 1-2 hold anything, or when symptoms appear and the log never shows a clean
shutdown (``[shutdown] ...``, ``Done.``).  An error line alone is not a failure: vLLM logs a bare ``ERROR``
record for one rejected request and goes on serving.  It is kept as evidence: while pending it is the root
cause offered for the process dying after it (a symptom, a lost process or a non-zero exit); once a sign of
life follows, it leaves the verdict and stays visible as ``first_error`` and in the error count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orchestrator.logparse import rootchoice
from orchestrator.logparse.causetext import crashed_in, same_message
from orchestrator.logparse.events import RootCause
from orchestrator.logparse.exits import with_quoted_exit
from orchestrator.logparse.phases import ASKED_STOP_RE
from orchestrator.logparse.prefixes import MAIN

#: Symptoms of workers whose parent process exited (``orphans_only``).
_ORPHANED = ("parent_exited", "worker_shutdown")

#: The hint of a stop asked for from outside that a client then failed on (``note_stop``).
STOPPED_HINT = ("The server was told to stop (a signal: a kill, a scheduler's time limit or cancel) while its client "
                "still needed it; the client's errors after this line are what the stop did.")

#: Items kept per evidence tier (the earliest ones).
KEEP = 8
#: Traceback text kept for the first item of a tier, and for the others.
FIRST_TEXT_CAP = 64 * 1024
OTHER_TEXT_CAP = 8 * 1024
#: A symptom's traceback is kept too (4 KiB): one can become the verdict's cause (an engine's echo of a worker's
#: error whose own traceback is not in the log, ``causetext.quoting``), and it is shown with it.
SYMPTOM_TEXT_CAP = 4 * 1024


@dataclass
class Evidence:
    """Everything the verdict is computed from; JSON-able for snapshots."""

    tb_causes: list[dict[str, Any]] = field(default_factory=list)
    line_causes: list[dict[str, Any]] = field(default_factory=list)
    error_lines: list[dict[str, Any]] = field(default_factory=list)  # pending: no sign of life since
    symptoms: list[dict[str, Any]] = field(default_factory=list)
    aftermath: list[dict[str, Any]] = field(default_factory=list)  # symptoms of the teardown itself
    echo_refs: list[str] = field(default_factory=list)
    clean_line: int | None = None
    stop_line: int | None = None  # the job was told to stop (a signal, a shutdown request) or said it is done
    stop_said: dict[str, Any] | None = None  # that line, when the stop was asked for from outside (``note_stop``)
    first_error: dict[str, Any] | None = None  # the first error line of the log, pending or not
    named_error: dict[str, Any] | None = None  # the first error line naming an exception, pending or not
    died_line: int | None = None  # a process died (a fatal symptom) before any clean end or stop
    stall: dict[str, Any] | None = None  # the first warning that the job will wait for ever (``stalls``)
    #: The last traceback cause the front end logged as an error record: [its first line, its last line]; the
    #: request it failed may be answered with a 4xx just after it (``answered``).
    answerable: list[int] | None = None
    #: Traceback causes a process logged (caught) while the server was up: a request answered after one shows the
    #: server lived through it (``served_through``).
    served: list[int] = field(default_factory=list)
    #: Lines of causes that kill their process where it stands (a GPU memory fault, a C++ ``terminate``): the
    #: tracebacks other processes print well after one are what its death did to them.
    fatal_lines: list[int] = field(default_factory=list)
    #: Line causes of a ``lived_with`` signature with no sign of life after them yet (a script's missing command).
    livable: list[int] = field(default_factory=list)
    #: ``echoed_index``'s last answer and the list lengths it was for (not state: not in ``to_dict``).
    _echoed: tuple[tuple[int, int], int] | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def _keep(items: list[dict[str, Any]], cause: RootCause, text_cap: int) -> None:
        """Keep the earliest items; later ones keep less traceback text so snapshots stay small."""
        if len(items) < KEEP:
            item = cause.to_dict()
            tb = item.get("traceback")
            cap = text_cap if items else FIRST_TEXT_CAP
            if isinstance(tb, str) and len(tb) > cap:
                item["traceback"] = tb[:cap] + "\n[... traceback truncated ...]"
            items.append(item)

    def add_traceback_cause(self, cause: RootCause) -> None:
        last = self.tb_causes[-1] if self.tb_causes else None
        if (last is not None and last.get("signature") == "rust_panic" and cause.exception is not None
                and cause.exception.endswith("PanicException") and 0 < cause.line_no - last["line_no"] <= 8):
            # A Rust panic, then the same panic raised in Python by the binding (pyo3's ``PanicException``): one
            # failure, which the Python traceback tells with its frames.
            self.tb_causes.pop()
            cause = dataclasses.replace(cause, signature="rust_panic", hint=last.get("hint"))
        self._keep(self.tb_causes, cause, OTHER_TEXT_CAP)

    def add_line_cause(self, cause: RootCause, fatal: bool = False, livable: bool = False) -> None:
        self._keep(self.line_causes, cause, OTHER_TEXT_CAP)
        if fatal and len(self.fatal_lines) < KEEP:
            self.fatal_lines.append(cause.line_no)
        if livable and len(self.livable) < KEEP:
            self.livable.append(cause.line_no)

    def amend_line_cause(self, line_no: int, message: str, burst: int = 0) -> None:
        """Give the line cause found at ``line_no`` (C++'s ``terminate called after throwing ...``), and those of
        the ``burst`` lines above it (several threads' terminates in a row, one ``what():`` after them), the
        message read on a later line (its ``what():``), once."""
        for item in self.line_causes:
            if 0 <= line_no - item["line_no"] <= burst and str(item["message"]).startswith("terminate called"):
                item["message"] = message

    def extend_line_cause(self, line_no: int, more: str, cap: int) -> bool:
        """Add a line of its message to the line cause found at ``line_no`` (pytest's next ``E`` line); whether
        one was there."""
        for item in self.line_causes:
            if item["line_no"] == line_no:
                item["message"] = f"{item['message']}\n{more}"[:cap]
                return True
        return False

    def amend_line_process(self, line_no: int, process: str) -> None:
        """Name the process of the line cause found at ``line_no`` when its line had no prefix (``main``)."""
        for item in self.line_causes:
            if item["line_no"] == line_no and item["process"] == MAIN:
                item["process"] = process

    def add_error_line(self, cause: RootCause) -> None:
        self._keep(self.error_lines, cause, OTHER_TEXT_CAP)
        if self.first_error is None:
            self.first_error = cause.to_dict()
        if self.named_error is None and cause.exception:
            self.named_error = cause.to_dict()

    def absorb_frames(self, process: str, line_no: int) -> list[str]:
        """The error lines ``process`` wrote one after another just above ``line_no`` were the frames of a
        traceback whose header was cut off (vLLM logs each line of one as an error record), up to its exception
        line at ``line_no``: they are part of that traceback, not error lines of their own.  Returns their
        texts."""
        above = line_no - 1
        latest = self.error_lines[::-1]  # (a copy: mypyc fails on reversed() of this list)
        if latest and latest[0]["process"] == process and latest[0]["line_no"] == above - 1:
            above -= 1  # (the innermost frame's ``raise`` statement, shown, was no error line of its own)
        start = above
        for item in latest:
            if item["process"] != process or item["line_no"] != above:
                break
            above -= 1
        if above == start:
            return []
        frames = [str(item["message"]) for item in self.error_lines if above < item["line_no"] < line_no]
        self.error_lines = [item for item in self.error_lines if not above < item["line_no"] < line_no]
        if self.first_error is not None and above < self.first_error["line_no"] < line_no:
            self.first_error = self.error_lines[0] if self.error_lines else None
        return frames

    def demote(self, survived: Callable[[dict[str, Any]], bool]) -> None:
        """The traceback causes ``survived`` picks were errors the job lived with (``repeats.py``): they become
        error lines."""
        moved = [item for item in self.tb_causes if survived(item)]
        if not moved:
            return
        self.tb_causes = [item for item in self.tb_causes if item not in moved]
        for item in moved:
            self._keep(self.error_lines, RootCause.from_dict(item), OTHER_TEXT_CAP)
        for item in sorted(moved, key=lambda i: int(i["line_no"])):
            if self.first_error is None or item["line_no"] < self.first_error["line_no"]:
                self.first_error = item
            if item.get("exception") and (self.named_error is None
                                          or item["line_no"] < self.named_error["line_no"]):
                self.named_error = item
        self.error_lines.sort(key=lambda i: int(i["line_no"]))

    def answered(self, line_no: int) -> bool:
        """A request was answered with a 4xx at ``line_no``: a front-end traceback that ended just before it
        was that request's failure, not the job's; it becomes a pending error line.  Whether one did."""
        if self.answerable is None:
            return False
        first, last = self.answerable
        self.answerable = None
        if not 0 < line_no - last <= 2:
            return False
        item = next((c for c in self.tb_causes if c["line_no"] == first), None)
        if item is None:
            return False
        self.tb_causes.remove(item)
        if len(self.error_lines) < KEEP:
            self.error_lines.append(item)
        return True

    def served_through(self) -> None:
        """A request was answered (2xx) after the tracebacks in ``served``, and nothing died: the server lived
        through them; they become error lines, with no sign of life after them yet."""
        served = set(self.served)
        self.served.clear()
        if self.died_line is None:
            self.demote(lambda item: item["line_no"] in served)

    def only_error_lines_of(self, process: str) -> bool:
        """Whether all the evidence is error lines, every one of them ``process``'s."""
        return (bool(self.error_lines) and not (self.tb_causes or self.line_causes or self.symptoms or self.aftermath
                                                or self.stall or self.livable)
                and all(item["process"] == process for item in self.error_lines))

    def pending_error(self) -> bool:
        """An error line, or a cause a script may go on from (``livable``), with no sign of life after it."""
        return bool(self.error_lines or self.livable)

    def clear_pending(self, lived: bool = True) -> None:
        """A sign of life: the job went on after its error lines, so none of them is a cause any more; nor
        (``lived``) is a cause it may go on from (a missing command in its script): that one stays an error it
        lived with."""
        self.error_lines.clear()
        if lived and self.livable:
            went_on = [item for item in self.line_causes if item["line_no"] in self.livable]
            self.line_causes = [item for item in self.line_causes if item["line_no"] not in self.livable]
            self.livable.clear()
            for item in went_on:
                if self.first_error is None or item["line_no"] < self.first_error["line_no"]:
                    self.first_error = item

    def demote_line_causes(self, reported: Callable[[dict[str, Any]], bool]) -> None:
        """The line causes ``reported`` picks only reported a death a later cause explains: they become symptoms."""
        moved = [item for item in self.line_causes if reported(item)]
        if moved:
            self.line_causes = [item for item in self.line_causes if item not in moved]
            for item in moved:
                self._keep(self.symptoms, RootCause.from_dict(item), SYMPTOM_TEXT_CAP)

    def add_symptom(self, cause: RootCause, aftermath: bool = False) -> None:
        self._keep(self.aftermath if aftermath else self.symptoms, cause, SYMPTOM_TEXT_CAP)

    def add_echo(self, ref: str) -> None:
        if len(self.echo_refs) < KEEP and ref not in self.echo_refs:
            self.echo_refs.append(ref[:4096])

    def wrong_so_far(self) -> bool:
        """Whether anything pointing at a failure has been seen: a cause, a symptom or a pending error line."""
        return (bool(self.tb_causes or self.line_causes or self.symptoms or self.aftermath or self.stall)
                or self.pending_error())

    def orphans_only(self) -> bool:
        """Whether all that looks wrong is workers saying their parent exited (``Parent process exited,
        terminating worker``): what an offline script's workers print when it ends, and when it is killed."""
        return (bool(self.symptoms) and not (self.tb_causes or self.line_causes or self.aftermath or self.stall)
                and not self.pending_error() and self.died_line is None
                and all(item.get("signature") in _ORPHANED for item in self.symptoms))

    def note_stop(self, line_no: int, text: str, process: str) -> None:
        """An orderly stop was asked for or announced at ``line_no``; one asked for from outside (a signal, a
        shutdown request) is kept: a client that gives up after it failed because of it (``root_item``)."""
        self.stop_line = line_no
        if ASKED_STOP_RE.search(text) is not None:
            self.stop_said = RootCause(None, text[:4096], process, None, "stopped_under_client", line_no,
                                       STOPPED_HINT).to_dict()

    def failed(self) -> bool:
        if self.tb_causes or self.line_causes:
            return True
        return bool(self.symptoms or self.aftermath) and (self.clean_line is None or self.died_line is not None)

    def root_cause(self) -> RootCause | None:
        item = self.root_item()
        return None if item is None else with_quoted_exit(RootCause.from_dict(crashed_in(item, self.symptoms)))

    def root_item(self) -> dict[str, Any] | None:
        """The kept cause ``root_cause`` is made of (``rootchoice``; cheap: the parser asks after every changed line)."""
        return rootchoice.root_item(self)

    def echoed_index(self) -> int:
        """Which traceback cause the first echo that names one points back to (0 when none does).  Both lists
        only grow, so the answer is kept until one of them does."""
        key = (len(self.tb_causes), len(self.echo_refs))
        cached = self._echoed
        if cached is not None and cached[0] == key:
            return int(cached[1])
        index = 0
        if self.echo_refs:
            messages = [str(item.get("message") or "").strip() for item in self.tb_causes]
            index = next((i for ref in self.echo_refs for i, message in enumerate(messages)
                          if same_message(message, ref.strip())), 0)
        self._echoed = (key, index)
        return index

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(**data)  # a snapshot from before first_error existed gets the default

    def first_error_cause(self) -> RootCause | None:
        return None if self.first_error is None else RootCause.from_dict(self.first_error)

