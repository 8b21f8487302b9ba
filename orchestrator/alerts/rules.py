"""Which alerts a run or host deserves now, and what they say. Pure: snapshots and a clock value in, alerts out.

Each alert carries a de-duplication key; the edge (``orchestrator.alerts``) records it under a unique
constraint, so an alert fires once per run and kind however often the rules are evaluated, and across
restarts of the monitor. A host outage is keyed by when it started, so each outage alerts once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from orchestrator.logparse.events import name_shown


class AlertKind(str, Enum):
    LOADING_FINISHED = "loading_finished"
    READY = "ready"
    FAILED = "failed"
    SUCCEEDED = "succeeded"
    LOST = "lost"
    CANCELLED = "cancelled"
    STALLED = "stalled"
    EXTRACTION_VERIFIED = "extraction_verified"
    HOST_UNREACHABLE = "host_unreachable"
    TEST = "test"


ALL_KINDS = tuple(k.value for k in AlertKind if k is not AlertKind.TEST)
TERMINAL_KINDS = {
    "failed": AlertKind.FAILED,
    "succeeded": AlertKind.SUCCEEDED,
    "lost": AlertKind.LOST,
    "cancelled": AlertKind.CANCELLED,
}
STALL_SIGNATURES = frozenset({"broadcast_wait"})
LOADED_PHASES = frozenset({"loaded", "serving"})


@dataclass(frozen=True)
class RunSnapshot:
    """What the rules need to know about one run, read from the history by the edge.

    A type of its own rather than `services.runview.RunView`: the rules are pure core and may not import the
    service layer (import-linter), and they judge a run by a few facts the view does not hold (the last
    activity as this monitor knows it, the stall threshold in force). It is built in one place,
    `RunView.snapshot`.
    """

    run_id: str
    name: str
    host: str
    status: str
    phase: str
    kind: str = "command"
    shards_done: int | None = None
    shards_total: int | None = None
    exit_code: int | None = None
    root_cause: Mapping[str, Any] | None = None
    hint: str | None = None
    started_at: datetime | None = None
    last_activity_at: datetime | None = None
    stall_minutes: float = 15.0
    muted: bool = False  # `eorch alerts mute`: the run deserves no alert at all


@dataclass(frozen=True)
class HostSnapshot:
    name: str
    reachable: bool | None
    unreachable_since: datetime | None
    last_error: str | None = None
    active_runs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunFacts:
    """What just happened to a run: the parsed events of the latest commit, and a status change if any."""

    events: tuple[Mapping[str, Any], ...] = ()
    new_status: str | None = None


@dataclass(frozen=True)
class AlertToRaise:
    kind: AlertKind
    dedup_key: str
    title: str
    body: str
    run_id: str | None = None
    host: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


def run_dedup_key(run_id: str, kind: AlertKind) -> str:
    return f"{run_id}:{kind.value}"


def host_dedup_key(host: str, since: datetime) -> str:
    return f"host:{host}:{AlertKind.HOST_UNREACHABLE.value}:{since.isoformat(timespec='seconds')}"


# ------------------------------------------------------------------------------------------------ rules


def evaluate(run: RunSnapshot, facts: RunFacts, now: datetime) -> list[AlertToRaise]:
    """The alerts this run deserves now (the edge drops those already raised); none for a muted run."""
    if run.muted:
        return []
    kinds: list[AlertKind] = []
    terminal = TERMINAL_KINDS.get(run.status)
    if terminal is not None:
        return [make_run_alert(run, terminal, now)]
    if run.status != "running":
        return []
    if _loading_finished(run, facts.events):
        kinds.append(AlertKind.LOADING_FINISHED)
    if _ready(run, facts.events):
        kinds.append(AlertKind.READY)
    if _extraction_verified(facts.events):
        kinds.append(AlertKind.EXTRACTION_VERIFIED)
    alerts = [make_run_alert(run, k, now) for k in kinds]
    stall_reason = stall_of(run, facts.events, now)
    if stall_reason:
        alerts.append(make_run_alert(run, AlertKind.STALLED, now, stall_reason))
    return alerts


def _event_phase(event: Mapping[str, Any]) -> str | None:
    if event.get("kind") != "phase_changed":
        return None
    value = event.get("to", event.get("phase"))
    return str(value) if value is not None else None


def _loading_finished(run: RunSnapshot, events: Sequence[Mapping[str, Any]]) -> bool:
    if run.shards_total and run.shards_done is not None and run.shards_done >= run.shards_total:
        return True
    if run.phase in LOADED_PHASES or any(_event_phase(e) in LOADED_PHASES for e in events):
        return True
    # Extraction started after the server came up: loading is necessarily over.
    return run.phase == "running" and bool(run.shards_total)


def _ready(run: RunSnapshot, events: Sequence[Mapping[str, Any]]) -> bool:
    if run.phase == "serving" or any(_event_phase(e) == "serving" for e in events):
        return True
    return run.phase == "running" and run.kind != "command"


def _extraction_verified(events: Sequence[Mapping[str, Any]]) -> bool:
    """The recipe's first-sample gate passed (a ``gate`` step event ``done``): the extraction writes good data."""
    return any(e.get("kind") == "step" and e.get("step") == "gate" and e.get("state") == "done" for e in events)


def _signature_of(event: Mapping[str, Any]) -> str | None:
    if event.get("kind") != "signature_matched":
        return None
    value = event.get("signature", event.get("id"))
    return str(value) if value is not None else None


def stall_of(run: RunSnapshot, events: Iterable[Mapping[str, Any]], now: datetime) -> str | None:
    """Why the running job looks stalled, or None: a known stall warning, or silence for N minutes."""
    if run.status != "running":
        return None
    for event in events:
        signature = _signature_of(event)
        if signature in STALL_SIGNATURES:
            return f"the log shows a stall warning ({signature})"
    since = run.last_activity_at or run.started_at
    if since is None:
        return None
    idle_minutes = (now - since).total_seconds() / 60
    if idle_minutes >= run.stall_minutes:
        return f"no new log output and no progress for {idle_minutes:.0f} minutes"
    return None


def evaluate_host(host: HostSnapshot, now: datetime, unreachable_minutes: float) -> list[AlertToRaise]:
    """A host unreachable for longer than the limit deserves one alert per outage."""
    if host.reachable is not False or host.unreachable_since is None:
        return []
    minutes = (now - host.unreachable_since).total_seconds() / 60
    if minutes < unreachable_minutes:
        return []
    title = f"eorch: host {host.name} unreachable for {minutes:.0f} min"
    lines = [f"Host {host.name} has been unreachable since {host.unreachable_since.isoformat(timespec='seconds')}Z.",
             "Runs on it keep their status; eorch reconnects and resumes following them."]
    if host.last_error:
        lines.append(f"Last error: {host.last_error}")
    if host.active_runs:
        lines.append(f"Active runs there: {', '.join(host.active_runs)}")
    lines.append(f"Check: eorch host check {host.name}")
    return [AlertToRaise(AlertKind.HOST_UNREACHABLE, host_dedup_key(host.name, host.unreachable_since), title,
                         "\n".join(lines), host=host.name, details={"minutes": round(minutes, 1)})]


# ----------------------------------------------------------------------------------------------- format

_WHAT = {
    AlertKind.LOADING_FINISHED: "finished loading the model",
    AlertKind.READY: "is ready (server up)",
    AlertKind.FAILED: "FAILED",
    AlertKind.SUCCEEDED: "succeeded",
    AlertKind.LOST: "was LOST (process gone without an exit code: killed, OOM killer or reboot)",
    AlertKind.CANCELLED: "was cancelled",
    AlertKind.STALLED: "looks STALLED",
    AlertKind.EXTRACTION_VERIFIED: "passed the first-sample check (shape, dtype, token ids, finite: extraction released)",
}


def make_run_alert(run: RunSnapshot, kind: AlertKind, now: datetime, reason: str | None = None) -> AlertToRaise:
    title, body = format_run_alert(run, kind, now, reason)
    details: dict[str, Any] = {"status": run.status, "phase": run.phase, "exit_code": run.exit_code}
    if run.root_cause:
        details["exception"] = run.root_cause.get("exception")
        details["signature"] = run.root_cause.get("signature")
    return AlertToRaise(kind, run_dedup_key(run.run_id, kind), title, body, run.run_id, run.host, details)


def format_run_alert(run: RunSnapshot, kind: AlertKind, now: datetime, reason: str | None = None) -> tuple[str, str]:
    """The title and body of a run alert: who, where, what happened, how far it got, why, what next."""
    what = _WHAT.get(kind, kind.value)
    title = f"eorch: {run.name} {what.split(' (')[0]} on {run.host}"
    lines = [f"Run {run.name} ({run.run_id}) on {run.host} {what}."]
    if reason:
        lines.append(f"Why: {reason}.")
    progress = f"Phase: {run.phase}"
    if run.shards_total:
        progress += f" · shards {run.shards_done or 0}/{run.shards_total}"
    if run.started_at is not None:
        progress += f" · running for {_minutes(run.started_at, now)}"
    lines.append(progress)
    if run.exit_code is not None:
        lines.append(f"Exit code: {run.exit_code}")
    cause = run.root_cause or {}
    if cause:
        where = f" [{cause['process']}]" if cause.get("process") else ""
        lines.append(f"Root cause{where}: {name_shown(cause)}: {cause.get('message') or '(empty)'}")
        if cause.get("signature"):
            lines.append(f"Signature: {cause['signature']}")
    if run.hint:
        lines.append(f"Hint: {run.hint}")
    lines.append(f"Details: eorch show {run.run_id}")
    return title, "\n".join(lines)


def _minutes(start: datetime, now: datetime) -> str:
    seconds = max(0, int((now - start).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def make_test_alert(now: datetime) -> AlertToRaise:
    """The alert `eorch alerts test` sends to every channel (never de-duplicated)."""
    stamp = now.isoformat(timespec="seconds")
    return AlertToRaise(AlertKind.TEST, f"test:{stamp}:{now.microsecond}", "eorch: test alert",
                        f"This is a test alert from eorch sent at {stamp}Z. If you read this, the channel works.")


def kind_allowed(kind: AlertKind, allowed: Sequence[str] | None) -> bool:
    """A channel with no filter gets every kind; test alerts reach every channel."""
    return kind is AlertKind.TEST or not allowed or kind.value in allowed
