"""Run status: an ordered state machine that never moves backwards, and how liveness maps onto it.

Pure: values in, values out. Status (is the process alive, how did it end) is kept apart from phase (what
the log says) and from host reachability (a dropped link never changes a run's status).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RunStatus(str, Enum):
    PENDING = "pending"
    LAUNCHING = "launching"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def is_terminal(self) -> bool:
        return self.rank >= _RANK[RunStatus.SUCCEEDED]


_RANK = {
    RunStatus.PENDING: 0,
    RunStatus.LAUNCHING: 1,
    RunStatus.RUNNING: 2,
    RunStatus.SUCCEEDED: 3,
    RunStatus.FAILED: 3,
    RunStatus.CANCELLED: 3,
    RunStatus.LOST: 3,
}

#: Every status's word, in order (what `--status` accepts).
STATUSES = tuple(s.value for s in RunStatus)
ACTIVE_STATUSES = (RunStatus.PENDING, RunStatus.LAUNCHING, RunStatus.RUNNING)


def advance(current: RunStatus, proposed: RunStatus) -> RunStatus:
    """The status after proposing ``proposed``: only forward moves apply; a terminal status is final."""
    if current.is_terminal() or proposed.rank <= current.rank:
        return current
    return proposed


@dataclass(frozen=True)
class Liveness:
    """What the host said about a run's process (see worker.ops.status)."""

    started: bool
    alive: bool
    rc: int | None
    boot_changed: bool = False
    vanished: bool = False  # the run directory is gone from the host: nothing left to follow or judge by
    never_started: bool = False  # recorded, but its launch was cut off before the wrapper started


def ended(live: Liveness) -> bool:
    """Whether the observation settles the run (the process is gone, or there is nothing left to watch)."""
    return not live.alive and (live.started or live.rc is not None or live.boot_changed or live.vanished
                               or live.never_started)


def status_from_liveness(live: Liveness, *, cancel_requested: bool, log_failed: bool) -> RunStatus:
    """Map one liveness observation to a status proposal.

    An ``rc`` decides how the run ended; a process gone without ``rc`` is ``lost`` (SIGKILL, OOM killer,
    reboot), and so is a run whose directory vanished from the host (a cleanup, a reinstalled host). A job
    that exited 0 but whose log shows a failure (a traceback, a script that printed an empty
    ``ERROR: `` and returned) is ``failed``: the user must not be told it succeeded.  ``log_failed`` is the
    log parser's verdict (``LogFollower.log_failed``): a lone ``ERROR`` record, such as a server rejecting
    one request and serving on, is not a failure.
    """
    if cancel_requested and not live.alive:
        return RunStatus.CANCELLED
    if live.vanished or live.never_started:
        return RunStatus.LOST
    if live.rc is not None:
        if live.rc == 0 and not log_failed:
            return RunStatus.SUCCEEDED
        return RunStatus.FAILED
    if live.alive:
        return RunStatus.RUNNING
    if live.started or live.boot_changed:
        return RunStatus.LOST
    return RunStatus.LAUNCHING


def merge_phase(current: str, proposed: str) -> str:
    """The run's phase after a proposal from the log or from a step event: it only moves forward.

    Two sources (the log parser's verdict and eorch's own step events) both propose phases; neither may
    pull the other back (a parser still saying "serving" must not undo a step event's "running").
    """
    from orchestrator.logparse.phases import Phase

    try:
        old, new = Phase(current), Phase(proposed)
    except ValueError:
        return proposed
    return new.value if new.rank > old.rank else old.value


# A phase that only restates how a run ended (the monitor records these when it ends).
_ENDING_PHASES = {RunStatus.SUCCEEDED: "stopped", RunStatus.FAILED: "failed", RunStatus.LOST: "failed"}


def shown_phase(status: RunStatus | str, phase: str | None, kind: str) -> str | None:
    """The phase word to show beside a status, or None: one place for the CLI (runs, show, watch) and the TUI.

    Phases come from what the log says (vLLM's markers, a recipe's steps). A plain command whose log never
    said one is still at the initial ``starting``: it has no phase, whatever its status. Nor has an ended
    run that never left ``starting``; and an ended run's ``stopped`` / ``failed`` beside ``succeeded`` /
    ``failed`` / ``lost`` would only repeat the status. What is left agrees with the status: ``running ·
    loading``, ``cancelled · serving`` (cancelled while it served), ``failed`` after ``loading``.
    """
    status = RunStatus(status)
    if not phase or (phase == "starting" and (kind == "command" or status.is_terminal())):
        return None
    if _ENDING_PHASES.get(status) == phase:
        return None
    return phase
