"""Which kept item of the evidence the root cause is made of (``Evidence.root_item``): the tiers' rules of
``evidence.py``'s docstring, and the exceptions to them that real logs showed (a cut traceback, a process killed
where it stood, a full disk, a port in use, a job hung until its time limit, a client whose server was told to
stop).  Pure: it reads the evidence and changes nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from orchestrator.logparse.causetext import header_text, quoting, thrown

if TYPE_CHECKING:
    from orchestrator.logparse.evidence import Evidence

_UNWRITTEN = ("hs_write_failed",)  # causes whose later tracebacks are their doing (``root_item``)
#: A server that could not listen, and the connection failures of what then tried to reach it (its own warmup,
#: a client): the failures are its doing (``root_item``).
_UNLISTENING = ("port_in_use",)
_CUDA_ENUM = re.compile(r"`cudaError\w+'")
_UNREACHED = re.compile(r"Connection|RemoteDisconnected|ProtocolError|MaxRetryError|ClientConnector")

#: Causes that announce a worker's exception whose own lines follow ("WorkerProc hit an exception.").
_ANNOUNCING = ("worker_exception",)
#: A scheduler stopping the job at its time limit, and what its root cause then says of an error before it.
_TIME_LIMITS = ("slurm_time_limit",)
HUNG_NOTE = ("The job went on from nothing after this error, until its scheduler stopped it at its time limit: it hung "
             "on it (more time would not have helped).")

#: Lines within which a traceback after a process-killing line is the same failure, told in Python.
SAME_BURST = 64
#: How far above a traceback raised without a message its process's error lines may say what it meant (lines).
BARE_REACH = 3


def root_item(ev: Evidence) -> dict[str, Any] | None:
    """The kept item ``Evidence.root_cause`` is made of (cheap: the parser asks after every changed line)."""
    if ev.tb_causes:
        chosen = ev.tb_causes[ev.echoed_index()]
        # A process killed where it stood well before the traceback: the others' errors are what its death
        # did to them (one just after it is the same failure told in Python: that one says more).
        killed = next((item for item in ev.line_causes if item["line_no"] in ev.fatal_lines
                       and item["line_no"] + SAME_BURST < chosen["line_no"]), None)
        if killed is not None:
            return thrown(killed, ev.line_causes)
        # The engine could not write a request's hidden states (a full disk): later tracebacks (the client's, on
        # the file that is not there) are what that did.  So are the connection failures of what then tried to
        # reach a server that could not listen (its port in use): its own warmup's, a client's.
        lost = (item for item in ev.line_causes if item["line_no"] < chosen["line_no"] and (
            item.get("signature") in _UNWRITTEN or (item.get("signature") in _UNLISTENING and _UNREACHED.search(
                str(chosen.get("exception") or "")) is not None)))
        if (found := next(lost, None)) is not None:
            return found
        if chosen.get("exception") or chosen.get("message"):
            return _said_above(ev, chosen)
        # A traceback cut before its exception line (the paste, or the record, ended early) names nothing:
        # the first cause that names its exception says more (another traceback, a line showing a known
        # cause), else an error line that names one (a paste that begins at a worker's exception line, its
        # traceback above it not copied), else a line showing a known cause, else a symptom above it that
        # says a process died ("Worker proc VllmWorker-3 died unexpectedly": a worker that died without a
        # word, and the engine's traceback about it cut) or names an exception ("RuntimeError: Worker
        # failed with error '...'", quoting a worker's).
        lines = [*ev.error_lines, *(item for item in (ev.first_error, ev.named_error) if item)]
        named = (item for item in [*ev.tb_causes, *ev.line_causes, *lines] if item.get("exception"))
        before = (item for item in ev.symptoms if item["line_no"] < chosen["line_no"] and item.get("message")
                  and (item["line_no"] == ev.died_line or item.get("exception")))
        # The error record's first line, just above the traceback it goes on with (``logger.exception``
        # writes the exception's text there), says what the cut traceback would have.
        head = ({**item, "traceback": chosen.get("traceback")} for item in lines
                if item["line_no"] == chosen["line_no"] - 1 and item["process"] == chosen["process"]
                and _worded(item))
        # Else another process's error line above it (a worker's CUDA error text, its exception line above the
        # paste's start, and then the engine's start-up traceback, cut): what the engine failed on.
        earlier = min((item for item in lines if item["line_no"] < chosen["line_no"]
                       and item["process"] != chosen["process"] and item.get("message")),
                      key=lambda item: item["line_no"], default=None)
        # Before that, the tail of a CUDA error's message its own process logged above it, the paste begun below
        # the error's first line (PyTorch names the error's enum on a line of its own: ``cudaErrorIllegalAddress``).
        cuda = next((item for item in lines if item["line_no"] < chosen["line_no"]
                     and item["process"] == chosen["process"] and _CUDA_ENUM.search(str(item.get("message")))),
                    None)
        said = ({**cuda, "traceback": chosen.get("traceback")} if cuda is not None
                else header_text(chosen) if earlier is None else earlier)
        return next(named, ev.line_causes[0] if ev.line_causes else next(before, next(head, said)))
    if ev.line_causes:
        first = ev.line_causes[0]
        # A known cause's record, then the traceback it goes on with, which is a symptom ("WorkerProc hit an
        # exception.", then torch_npu's "The Inner error is reported as above"): the traceback says more.
        told = (item for item in ev.symptoms if item.get("traceback") and item["process"] == first["process"]
                and item["line_no"] == first["line_no"] + 1 and first.get("signature") in _ANNOUNCING)
        # A worker's announcement of its exception, then, in the same burst of its lines, a known cause
        # without the traceback's header (a paste that kept the exception line, not the frames): that one.
        shown = (item for item in ev.line_causes[1:] if first.get("signature") in _ANNOUNCING
                 and item["process"] == first["process"] and item.get("signature") not in _ANNOUNCING
                 and item["line_no"] - first["line_no"] <= SAME_BURST)
        # eorch's recipe reporting its failed step after a vLLM process died without a word (``engine core exited
        # unexpectedly``, then ``FAILED: extract: vLLM server died ...: EngineDeadError``): that death.
        died = next((item for item in ev.symptoms if item["line_no"] == ev.died_line), None)
        if first.get("signature") == "recipe_failed" and died is not None and died["line_no"] < first["line_no"]:
            return died
        # A job stopped at its time limit after an error nothing went on from (a hub it could not reach, retried
        # for minutes by a node without internet): it hung on that error.
        hung = [item for item in ev.error_lines if item["line_no"] < first["line_no"]] if (
            first.get("signature") in _TIME_LIMITS) else []
        if hung:
            picked = _said_above(ev, next((item for item in hung if item.get("traceback")), hung[0]))
            hint = picked.get("hint")
            return {**picked, "hint": f"{hint} {HUNG_NOTE}" if hint else HUNG_NOTE}
        # A client that gave up on a server told to stop under it (a ``kill``, a scheduler's stop): that stop.
        asked = ev.stop_said
        if first.get("signature") == "client_aborted" and asked is not None and asked["line_no"] < first["line_no"]:
            return asked
        return next(told, next(shown, first))
    if ev.stall is not None and ev.failed():
        return ev.stall  # the job waited for what could not come, and was stopped or died waiting
    if ev.error_lines:
        died = next((item for item in ev.symptoms if item["line_no"] == ev.died_line), None)
        if died is not None and died["line_no"] < ev.error_lines[0]["line_no"]:
            # A process died; the errors after it, what its death did.  But an error record with the
            # traceback of a named exception right after it is the dead process's own, logged late (V0's
            # ``MQLLMEngine is already dead``, then the engine's ``RuntimeError(...)`` and its traceback).
            # (its traceback cut after the header: the record's first line names the exception, the next
            # goes on with the traceback)
            burst = [item for item in ev.error_lines if item.get("exception")
                     and item["line_no"] - died["line_no"] <= SAME_BURST]
            below = {(t["line_no"] - 1, t["process"]): t for t in ev.error_lines if t.get("traceback")}
            headed = ({**item, "traceback": below[(item["line_no"], item["process"])].get("traceback")}
                      for item in burst if (item["line_no"], item["process"]) in below)
            # (or its record cut after the exception's ``repr``, ``ValueError('Attempted to assign ...``: what V0's
            # engine logs first)
            logged = next(({**item, "message": str(item["message"])[2:]} for item in burst
                           if str(item.get("message") or "")[:2] in ("('", '("')), None)
            late = next((item for item in burst if item.get("traceback")), next(headed, logged))
            return quoting(ev.symptoms, ev.echo_refs) or late or died
        # An engine's echo that quotes a worker's error says what failed; error records that name no
        # exception (a worker's frame lines, its exception line cut from the paste) say less.
        if not any(item.get("exception") for item in ev.error_lines) and ev.failed():
            echo = quoting(ev.symptoms, ev.echo_refs)
            if echo is not None:
                return echo
        # A traceback says more than the line that announced it ("Exception in ASGI application",
        # "Invocation of wake_up method failed", a bare ERROR record): the first pending one with a
        # traceback, when there is one; else the first that says something (not a caret line, ``^^^^``, the
        # one of a worker's traceback records a paste begins at).
        worded = (item for item in ev.error_lines if _worded(item))
        picked = next((item for item in ev.error_lines if item.get("traceback")),
                      next(worded, ev.error_lines[0]))
        return _said_above(ev, picked)
    if (ev.symptoms or ev.aftermath) and ev.failed():
        items = ev.symptoms or ev.aftermath
        # A record's first line, then the traceback it goes on with (``logger.exception``): the traceback.
        told = (item for item in items[1:2] if item.get("traceback") and item["process"] == items[0]["process"]
                and item["line_no"] == items[0]["line_no"] + 1)
        return quoting(items, ev.echo_refs) or next(told, items[0])
    return None

def _said_above(ev: Evidence, chosen: dict[str, Any]) -> dict[str, Any]:
    """An exception raised without a message, just after its process logged error lines (V0's ``Engine
    iteration timed out. This should never happen!``, then ``raise asyncio.TimeoutError``): the first of those
    lines says what it means.  ``chosen`` as it is when it has a message or no exception."""
    if not chosen.get("exception") or chosen.get("message"):
        return chosen
    burst = [item for item in (*ev.error_lines, ev.first_error, ev.named_error) if item is not None
             and item["process"] == chosen["process"] and 0 < chosen["line_no"] - item["line_no"] <= BARE_REACH
             and item.get("message") and not item.get("exception")]
    if not burst:
        return chosen
    return {**chosen, "message": min(burst, key=lambda item: int(item["line_no"]))["message"]}


def _worded(item: dict[str, Any]) -> bool:
    """Whether an error line's text says something (not a caret line, ``^^^^``: a traceback's line a paste begins at)."""
    return any(c.isalnum() for c in str(item.get("message") or ""))
