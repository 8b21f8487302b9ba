"""Facts workers post to the UI. Workers never touch widgets; the handlers of these messages own state.

Snapshots (runs, a run's detail, hosts) carry ``can_replace``: when a newer one is queued before the older
was handled, only the newer is processed, so a fast refresh or a burst of monitor notices coalesces.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from textual.message import Message

from orchestrator.core.notices import Notice
from orchestrator.services.hosts import HostView
from orchestrator.services.runview import RunView
from tui.data import AlertRow, RunDetail
from tui.launch_plan import LaunchPlan


@dataclass
class RunsLoaded(Message):
    runs: tuple[RunView, ...]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsLoaded)


@dataclass
class RunsRefreshed(Message, bubble=False):
    """The app's latest runs snapshot, handed down to a screen."""

    runs: tuple[RunView, ...]
    now: datetime


@dataclass
class RunOpenRequested(Message):
    """A screen asks the app to open a run's detail (bubbles up to the app)."""

    run_id: str


@dataclass
class RunsRefreshRequested(Message):
    """A screen changed something (launched, cancelled): the app reloads the runs now."""


@dataclass
class RunDetailLoaded(Message):
    detail: RunDetail

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunDetailLoaded) and message.detail.row.id == self.detail.row.id


@dataclass
class RunLoadFailed(Message):
    run_id: str
    error: str


@dataclass
class LogLinesReceived(Message):
    """Whole lines read from the remote log; ``offset`` is the byte offset after the last of them.

    Never coalesced: every line is shown."""

    run_id: str
    lines: tuple[str, ...]
    offset: int


@dataclass
class LogFollowFailed(Message):
    run_id: str
    error: str


@dataclass
class HostsLoaded(Message):
    hosts: tuple[HostView, ...]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostsLoaded)


@dataclass
class HostChecked(Message):
    host: str
    facts: dict[str, Any] | None
    error: str | None = None


@dataclass
class AlertsLoaded(Message):
    alerts: tuple[AlertRow, ...]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, AlertsLoaded)


@dataclass
class AlertRaised(Message):
    title: str
    body: str
    severity: str  # "information" | "warning" | "error"
    run_id: str | None = None


@dataclass
class MonitorNoticed(Message):
    """A monitor notice, relayed from its listener (called on the app's event loop)."""

    notice: Notice

    def can_replace(self, message: Message) -> bool:
        # Progress of one run coalesces; status and reachability changes are never dropped.
        from orchestrator.core.notices import RunProgressed

        return (
            isinstance(message, MonitorNoticed)
            and isinstance(self.notice, RunProgressed)
            and isinstance(message.notice, RunProgressed)
            and message.notice.run_id == self.notice.run_id
        )


@dataclass
class MonitorStateChanged(Message):
    """``following`` (this process records), ``read-only`` (another process does), ``off`` or ``stopped``."""

    state: str
    detail: str = ""


@dataclass
class RunLaunched(Message):
    run_id: str
    name: str
    host: str


@dataclass
class LaunchFailed(Message):
    error: str


@dataclass
class RunCancelled(Message):
    run_id: str
    status: str


@dataclass
class CancelFailed(Message):
    run_id: str
    error: str


@dataclass
class HistoryLoaded(Message):
    runs: tuple[RunView, ...]
    note: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HistoryLoaded)


@dataclass
class LaunchPlanned(Message):
    """The launch form checked: what would run (``launcher.launch``'s host and request) or why it cannot."""

    planned: LaunchPlan | None
    error: str | None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LaunchPlanned)
