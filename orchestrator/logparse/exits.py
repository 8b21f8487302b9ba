"""What a process's exit status adds to the verdict on its log.

A log that simply stops says nothing; the exit status may: 137 (128 + 9, as eorch's wrapper and shells
write it) or -9 (Python's ``returncode``) is SIGKILL, most often the kernel's OOM killer.  ``eorch log
analyze --exit-code`` and the monitor (for a followed run) both use ``with_exit_code``, so the two agree.
"""

from __future__ import annotations

import dataclasses
import re
import signal
from collections.abc import Mapping
from typing import Any

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.events import RootCause
from orchestrator.logparse.phases import Phase

#: signal -> (what the root cause says, signature id)
_SIGNALS: dict[int, tuple[str, str]] = {
    signal.SIGKILL: ("killed (SIGKILL; OOM killer?)", "killed"),
    signal.SIGABRT: ("aborted (SIGABRT)", "aborted"),
    signal.SIGSEGV: ("segmentation fault (SIGSEGV)", "segfault"),
    signal.SIGBUS: ("bus error (SIGBUS)", "segfault"),
    signal.SIGTERM: ("stopped by SIGTERM (a kill, a scheduler's stop or cancel)", "stopped_by_signal"),
    signal.SIGINT: ("stopped by SIGINT (Ctrl-C)", "stopped_by_signal"),
}


#: What a SIGKILL is when the log shows the job stopping (a stop signal's clean shutdown, or its own end) first:
#: not a crash, and seldom the OOM killer; what the kernel log check adds to the bare cause is kept after it.
_STOPPING = ("killed (SIGKILL) while stopping: the log shows a stop first, then the shutdown outlived a grace "
             "period (docker stop, systemd, Slurm's KillWait) or a kill -9 came")
_STOPPING_ID = "killed_while_stopping"


def when_stopping(cause: RootCause) -> RootCause:
    """``cause`` for a run whose log shows it stopping before its end: a SIGKILL's (``killed``) becomes
    ``killed_while_stopping``, with what the kernel log check added; any other cause is kept."""
    bare, sig_id = _SIGNALS[signal.SIGKILL]
    if cause.signature != sig_id or not cause.message.startswith(bare):
        return cause
    return dataclasses.replace(cause, message=f"{_STOPPING}{cause.message[len(bare):]}"[:600],
                               signature=_STOPPING_ID)


#: Root causes that say no more than the exit status does: the shell's ``Killed`` (a job run from a script).
_ONLY_A_SIGNAL = frozenset({"shell_killed"})


def names_only_a_signal(root_cause: Mapping[str, Any] | None) -> bool:
    """Whether a run's recorded root cause (JSON) is none, or one that says no more than its exit status:
    what the host's kernel log says of a SIGKILL is then still worth asking for, and recording."""
    return root_cause is None or root_cause.get("signature") in _ONLY_A_SIGNAL


def after_signal_only(root_cause: Mapping[str, Any] | None, killed: RootCause | None) -> RootCause | None:
    """What replaces a recorded root cause that ``names_only_a_signal``, once ``killed`` (what the exit status
    or the host's kernel log says of the kill) is known; None keeps the recorded one.

    A kernel log that names the kill (an OOM kill, an Xid) wins.  When it names nothing, the shell's own line
    (``run.sh: line 12: 4821 Killed python serve.py``: the command killed) is kept, with what the kernel log
    check added to the bare signal (not readable; no entry around the end)."""
    bare, sig_id = _SIGNALS[signal.SIGKILL]
    if killed is None or root_cause is None or killed.signature != sig_id:
        return killed
    added = killed.message[len(bare):] if killed.message.startswith(bare) else f" — {killed.message}"
    if not added:
        return None
    said = str(root_cause.get("message") or "")
    return RootCause(root_cause.get("exception"), f"{said}{added}"[:600], root_cause.get("process"),
                     root_cause.get("traceback"), root_cause.get("signature"), killed.line_no)


#: A process's exit status as a supervisor quotes it: vLLM's ``Worker proc VllmWorker-0 died unexpectedly (exit code:
#: -11)``, ``Process EngineCore_DP0 (PID: 391) died with exit code -9``.
_QUOTED_EXIT = re.compile(r"exit code:? (-?\d+)")


def with_quoted_exit(cause: RootCause) -> RootCause:
    """A process death whose line quotes the exit status: the hint starts with what that status means (vLLM
    writes ``-11``, not SIGSEGV)."""
    if cause.signature != "worker_died" or (m := _QUOTED_EXIT.search(cause.message)) is None:
        return cause
    code = int(m.group(1))
    sig = exit_signal(code)
    if code == 0:  # (not the OOM killer: a SIGKILL is -9)
        return dataclasses.replace(cause, hint="Exit code 0: the process ended without an error of its own, most "
                                   "often on a stop signal it handled (SIGTERM: a kill, a scheduler, a node agent).")
    if sig is None:
        return cause
    try:
        said = _SIGNALS[sig][0] if sig in _SIGNALS else f"ended by {signal.Signals(sig).name}"
    except ValueError:  # not a signal this platform knows
        return cause
    return dataclasses.replace(cause, hint=f"Exit code {code}: {said}. {cause.hint or ''}".rstrip())


def exit_signal(exit_code: int | None) -> int | None:
    """The signal that ended the process, from ``128 + N`` or ``-N``; None for a plain exit."""
    if exit_code is None or exit_code == 0:
        return None
    if exit_code < 0:
        return -exit_code
    if 128 < exit_code < 128 + 65:
        return exit_code - 128
    return None


def exit_root_cause(exit_code: int | None, line_no: int = 0) -> RootCause | None:
    """The root cause an exit status names by itself (a known fatal signal), or None."""
    sig = exit_signal(exit_code)
    if sig is None or sig not in _SIGNALS:
        return None
    message, sig_id = _SIGNALS[sig]
    return RootCause(None, message, None, None, sig_id, line_no)


def with_exit_code(analysis: Analysis, exit_code: int | None) -> Analysis:
    """The verdict once the exit status is known: non-zero fails the job; when the log names no cause, a
    fatal signal becomes the root cause (a cause in the log always wins: a killed worker's traceback); a
    SIGKILL after the log shows the job stopping says so (``when_stopping``)."""
    if exit_code is None or exit_code == 0:
        return analysis
    root = analysis.root_cause
    if root is None or not analysis.failed:
        root = exit_root_cause(exit_code, analysis.lines) or root
        if root is not None and analysis.phase is Phase.STOPPED:
            root = when_stopping(root)
    return dataclasses.replace(analysis, failed=True, phase=Phase.FAILED, root_cause=root)
