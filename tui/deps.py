"""What a screen needs from the dashboard, handed to it in its constructor (tests build their own)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from orchestrator.context import Context
from tui.logfeed import LogFeed


@dataclass(frozen=True)
class ScreenDeps:
    ctx: Context
    clock: Callable[[], datetime]
    #: The monitor's state as the app knows it: ``following``, ``read-only``, ``checked``, ``off``.
    monitor_state: Callable[[], str]
    log_feed: LogFeed

    @property
    def monitor_running(self) -> bool:
        """Whether some process follows the runs (this one or another), as far as the app knows."""
        return self.monitor_state() in ("following", "read-only")
