"""Facts the monitor announces to whoever listens (CLI printer, alert dispatcher, TUI)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunProgressed:
    """The run row changed (phase, shards, progress, root cause) after new log lines or step events."""

    run_id: str
    events: tuple[dict[str, Any], ...] = field(default=())


@dataclass(frozen=True)
class LogLinesRead:
    """Whole lines a follower read from a run's log, as a screen shows them (``logparse.shown``), after they
    were recorded; ``offset`` is the byte offset just past the last of them."""

    run_id: str
    lines: tuple[str, ...]
    offset: int


@dataclass(frozen=True)
class RunStatusChanged:
    run_id: str
    old: str
    new: str


@dataclass(frozen=True)
class HostReachabilityChanged:
    host: str
    reachable: bool
    error: str | None = None


@dataclass(frozen=True)
class LogTruncated:
    run_id: str
    old_offset: int
    new_size: int


Notice = RunProgressed | LogLinesRead | RunStatusChanged | HostReachabilityChanged | LogTruncated
