"""What a kept cause's text says when its own does not say enough (``evidence.Evidence.root_item``): a traceback
cut before its exception line, told by its header line or its last frame; and whether a kept cause is the one an
engine's echo points back to."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.logparse.events import CUT_NOTE, last_frame
from orchestrator.logparse.prefixes import MAIN
from orchestrator.logparse.tbtext import EXC_RE, LEVELS, exception_like

#: The hint of an engine's echo of a worker's error whose own traceback the log lacks (``quoting``).
ECHO_ALONE_HINT = ("The engine re-raised a worker's error (Worker failed with error '...'), named here; the worker's own "
                   "traceback is not in this log: look for it where the workers' output went (their own log or "
                   "stderr), or in a fuller copy.")

#: A progress bar's text (``Postprocessing:   0%|     | 0/900 [00:00<?, ?it/s]``): a header glued behind one says
#: nothing by it.
_PROGRESS_TEXT = re.compile(r"\d%\||\| *\d+/\d+ \[")


def header_text(item: dict[str, Any]) -> dict[str, Any]:
    """A traceback cause that names nothing, with a message that says what it can: the text its header line
    began with (``EngineCore hit an exception: Traceback (most recent call last):``), unless that was a progress
    bar the header was glued to, and that it was cut, with its last frame and that frame's source line (where
    it was raised)."""
    lines = str(item.get("traceback") or "").split("\n")
    at = lines[0].find("Traceback (most recent call last)")
    text = lines[0][:at].strip().rstrip(":").strip() if at > 0 else ""
    said = text if text and _PROGRESS_TEXT.search(text) is None and text not in LEVELS else ""  # (uvicorn's ``ERROR:``)
    where = last_frame(str(item.get("traceback") or ""))
    if where is None:
        return {**item, "message": said} if said else item
    cut = f"{CUT_NOTE}; last frame {where}"
    return {**item, "message": f"{said} ({cut})" if said else cut}


def same_message(message: str, ref: str) -> bool:
    """Whether a kept cause's message (stripped) is the one an echo points back to (stripped)."""
    if message == ref:
        return True
    return bool(ref) and bool(message) and (message.startswith(ref) or ref.startswith(message))


#: Crash reports a process writes with no prefix of its own: a native crash handler's, faulthandler's.
_UNPREFIXED_CRASHES = frozenset({"segfault_report", "python_fatal_error"})
#: A supervisor's line naming the process that died (vLLM's ``Worker proc VllmWorker-3 died unexpectedly``).
_DIED_NAMED = re.compile(r"\b(?:Worker proc|Engine core proc) (\S+) died unexpectedly")
#: Lines from a crash report to the supervisor's line: its native frames (~60 to ~150), then the notice.
_CRASH_REACH = 400


def crashed_in(item: dict[str, Any], symptoms: list[dict[str, Any]]) -> dict[str, Any]:
    """A crash report without a writer's prefix (so kept as ``main``'s) named after the process a supervisor says
    died just after it: a worker's segfault goes to the terminal the server shares with it."""
    if item.get("signature") not in _UNPREFIXED_CRASHES or item.get("process") != MAIN:
        return item
    at = int(item["line_no"])
    for s in symptoms:
        m = _DIED_NAMED.search(str(s.get("message") or ""))
        if m is not None and at < int(s["line_no"]) <= at + _CRASH_REACH:
            return {**item, "process": m.group(1)}
    return item


#: Lines from a C++ exception's record to the ``terminate`` it ends in: c10's native frames (~10 to ~30).
_THROW_REACH = 48


def thrown(killed: dict[str, Any], line_causes: list[dict[str, Any]]) -> dict[str, Any]:
    """A C++ ``terminate called after throwing an instance of 'c10::DistBackendError'`` that says only the type: the
    cause line just above it that c10 wrote as it threw (``[E520 ...] ProcessGroupNCCL ... watchdog thread
    terminated with exception: CUDA error: an illegal memory access was encountered``), which says what."""
    if killed.get("signature") != "cpp_terminate" or "what()" in str(killed.get("message") or ""):
        return killed
    at = int(killed["line_no"])
    above = [item for item in line_causes if at - _THROW_REACH <= int(item["line_no"]) < at and item.get("message")
             and item.get("signature") != "cpp_terminate"]
    return above[-1] if above else killed


def quoting(items: list[dict[str, Any]], refs: list[str]) -> dict[str, Any] | None:
    """The engine's echo of a worker's error (``Worker failed with error 'NPU out of memory ...'``; ``refs``: what
    the echoes quote) among ``items``, the worker's own traceback not in the log: what failed, as the echo quotes
    it, and the exception it names when it quotes one with its message (``'AssertionError: auto_functionalized
    was not removed'``)."""
    for item in items:
        ref = next((r for r in refs if r in (item.get("message") or "")), None)
        if ref is None:
            continue
        m = EXC_RE.match(ref.strip())
        if m is not None and m.group("msg") and exception_like(ref.strip()):
            return {**item, "exception": m.group("exc"), "message": m.group("msg"), "hint": ECHO_ALONE_HINT}
        return {**item, "hint": ECHO_ALONE_HINT}
    return None
