"""How current a run's status and progress are, told honestly. Pure: values and clock readings in, text out.

A status is only as good as its last liveness check (``checked_at``); a progress ETA only as good as the
output it was read from (``last_output_at``). These helpers turn both into what the CLI and the TUI say:
"as of 08:22, no monitor running", "last output 12m ago", "ETA 4m19s" counted down from that output, and
"overdue" once it has passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.core.humanize import short_span

# Below this, output is "just now"; the ETA of a run that is still writing is not second-guessed.
QUIET_AFTER_S = 60.0


def output_time(live: Mapping[str, Any], host_now: float | None, local_now: datetime) -> datetime | None:
    """When the job last wrote its log or step events, in our clock, from the files' mtimes on the host.

    The age is taken on the host's own clock (its ``now`` against its mtimes), so a skewed host clock does
    not make a run look stalled or busy.
    """
    mtimes = [m for m in (live.get("log_mtime"), live.get("events_mtime")) if m is not None]
    if not mtimes or host_now is None:
        return None
    age_s = max(0.0, float(host_now) - max(float(m) for m in mtimes))
    return local_now - timedelta(seconds=age_s)


def quiet_for(last_output_at: datetime | None, now: datetime) -> float | None:
    """Seconds since the job last wrote anything; None if unknown."""
    if last_output_at is None:
        return None
    return max(0.0, (now - last_output_at).total_seconds())


def last_output_text(last_output_at: datetime | None, now: datetime) -> str:
    """`last output 12m ago` (or `just now`); "" when unknown."""
    quiet = quiet_for(last_output_at, now)
    if quiet is None:
        return ""
    return "last output just now" if quiet < QUIET_AFTER_S else f"last output {short_span(quiet)} ago"


def eta_left(eta_s: float | None, last_output_at: datetime | None, now: datetime) -> float | None:
    """The ETA the log gave, counted down from when it was written: negative once it has passed by more than
    ``QUIET_AFTER_S`` (a bar's ETA is rounded to the second and its next frame may be a minute away: a few
    seconds past it is 0, not "overdue 3s")."""
    if eta_s is None:
        return None
    quiet = quiet_for(last_output_at, now) or 0.0
    left = eta_s - quiet
    return 0.0 if -QUIET_AFTER_S < left < 0 else left


def eta_text(eta_s: float | None, last_output_at: datetime | None, now: datetime) -> str:
    """`ETA 4m19s`, or `overdue 8m` once the log's ETA has passed without the job finishing; "" if none."""
    left = eta_left(eta_s, last_output_at, now)
    if left is None:
        return ""
    return f"ETA {short_span(left)}" if left >= 0 else f"overdue {short_span(-left)}"


def clock_time(value: datetime) -> str:
    """A naive UTC time from the history as the user's local HH:MM."""
    return value.replace(tzinfo=UTC).astimezone().strftime("%H:%M")


def as_of_text(checked_at: datetime | None, created_at: datetime, why: str) -> str:
    """`as of 08:22, no monitor running; …`: the time the status was last confirmed, and why not since."""
    return f"as of {clock_time(checked_at or created_at)}, {why}"


def status_note(status: str, *, checked_at: datetime | None, created_at: datetime, host: str,
                host_reachable: bool | None, host_error: str | None, monitor_running: bool) -> str:
    """What must be said next to an active run's status that could not be confirmed: "" when it is current.

    It is current while a monitor follows a reachable host, or when a reading command just checked it; it is
    not when its host is unreachable (with or without a monitor).
    """
    if status in TERMINAL or host_reachable is not False:
        return ""
    why = "no monitor running" if not monitor_running else "monitor reconnecting"
    return as_of_text(checked_at, created_at, f"{why}; {host} unreachable" + (f": {host_error}" if host_error else ""))


TERMINAL = frozenset({"succeeded", "failed", "cancelled", "lost"})
