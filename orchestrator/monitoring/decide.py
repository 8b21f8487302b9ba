"""The monitor's decision: one liveness report and the stored run in, the status/phase change out.

Pure: no SSH, no SQLite, no clock (how long a pending run has waited is passed in). The host watcher
(``orchestrator.monitoring.watcher``) asks the host, reads the run from the history, calls these two
functions and writes what they return:

- ``assess``: what a report says before the log is read to its end: is the process gone (the run is
  settled once its log is drained), must the log be drained first (not when the run directory itself is
  gone), was a run recorded as pending found alive (its launcher was cut off after starting it).
- ``settle``: how an ended run ended: its status, exit code, phase, root cause and the facts recorded
  with the status change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.core.runstate import Liveness, RunStatus, ended, status_from_liveness
from orchestrator.logparse import exit_root_cause
from orchestrator.logparse.events import RootCause
from orchestrator.logparse.exits import after_signal_only, names_only_a_signal, when_stopping
from orchestrator.monitoring.liveness import cancel_reached_host, liveness_from, lost_reason, lost_root_cause
from worker.protocol import RunStatusReport


@dataclass(frozen=True)
class StoredRun:
    """What the history holds about a run that the decision depends on."""

    status: RunStatus
    phase: str = "starting"
    cancel_requested: bool = False
    root_cause: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Assessment:
    liveness: Liveness
    ended: bool  # the process is gone (or there is nothing left to watch): settle the run
    drain_first: bool  # read the log to the size it had when the process ended before settling
    launch_cut_off: bool  # recorded as pending, found alive: it runs, its launcher was cut off


@dataclass(frozen=True)
class RootCauseFound:
    """A root cause eorch found itself (a fatal signal in the exit status, a lost run's reason)."""

    root_cause: dict[str, Any]
    signature: str | None
    sets_signature: bool  # a lost run's reason keeps the log's signature


@dataclass(frozen=True)
class Ending:
    status: RunStatus
    exit_code: int | None
    cancel_requested: bool
    phase: str
    root_cause: RootCauseFound | None  # None: the run's root cause stays as the log left it
    boot_changed: bool
    facts: dict[str, Any] = field(default_factory=dict)  # recorded with the status change (scheduler, reason)


def assess(report: RunStatusReport, stored: StoredRun, *, pending_for_s: float | None = None) -> Assessment:
    """``pending_for_s``: how long ago the run was recorded; only looked at while it is ``pending``."""
    waited = pending_for_s if stored.status is RunStatus.PENDING else None
    live = liveness_from(report, pending_for_s=waited)
    return Assessment(
        liveness=live,
        ended=ended(live),
        drain_first=not live.vanished,
        launch_cut_off=waited is not None and live.alive,
    )


def settle(report: RunStatusReport, live: Liveness, stored: StoredRun, *, log_failed: bool,
           killed: RootCause | None = None) -> Ending:
    """How an ended run ended. ``log_failed``: the log parser's verdict on the whole (drained) log;
    ``killed``: what the edge learnt about a SIGKILL (the host's kernel log), else the exit status says it."""
    cancel_requested = stored.cancel_requested or cancel_reached_host(report)
    status = status_from_liveness(live, cancel_requested=cancel_requested, log_failed=log_failed)
    rc = report.rc
    found: RootCauseFound | None = None
    if status is RunStatus.FAILED and names_only_a_signal(stored.root_cause):
        # A log that just stops (or ends in the shell's "Killed"): the kernel log or the exit status says why.
        killed = after_signal_only(stored.root_cause, killed or exit_root_cause(rc))
        if killed is not None and stored.phase == "stopped":  # its log showed it stopping: not a crash
            killed = when_stopping(killed)
        if killed is not None:
            found = RootCauseFound(killed.to_json(), killed.signature, sets_signature=True)
    phase = stored.phase
    if status in (RunStatus.FAILED, RunStatus.LOST) and phase != "failed":
        phase = "failed"
    elif status is RunStatus.SUCCEEDED and phase != "failed":
        phase = "stopped"
    facts: dict[str, Any] = {"scheduler": report.scheduler} if report.scheduler else {}
    if (reason := lost_reason(live, report)) is not None:
        facts["reason"] = reason
        if status is RunStatus.LOST and not (stored.root_cause or {}).get("traceback"):  # show and watch print it
            found = RootCauseFound(lost_root_cause(reason), None, sets_signature=False)
    return Ending(status, rc, cancel_requested, phase, found, report.boot_changed, facts)
