"""`eorch tui`: the dashboard app. It owns the runs snapshot, the in-process monitor and the alerts.

One timer reloads the runs from the history in a thread worker; the app compares each snapshot with the
last to raise alerts (so alerts work whether this process follows the runs or a daemon does) and hands
the snapshot to every screen with a non-bubbling ``RunsRefreshed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from orchestrator.clock import utcnow
from orchestrator.context import Context
from orchestrator.notices import HostReachabilityChanged, Notice
from orchestrator.services.runview import RunView
from tui import data
from tui.data import AlertRow
from tui.messages import AlertRaised, MonitorNoticed, MonitorStateChanged, RunsLoaded

ALERT_SEVERITY = {"failed": "error", "lost": "error", "cancelled": "warning", "succeeded": "information",
                  "stalled": "warning", "host_unreachable": "warning"}
TAKEOVER_RETRY_S = 10.0
STATUS_CHECK_S = 15.0


@dataclass
class RunsRefreshed(Message, bubble=False):
    """The app's latest runs snapshot, handed down to a screen."""

    runs: tuple[RunView, ...]
    now: datetime


class EorchApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "eorch"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("a", "alerts", "Alerts"),
        Binding("question_mark", "toggle_keys", "Keys"),
        Binding("ctrl+p", "command_palette", "Palette", show=False),
    ]

    def __init__(
        self,
        ctx: Context,
        *,
        clock: Callable[[], datetime] = utcnow,
        refresh_s: float = 1.0,
        monitor: str = "auto",
        open_run: str | None = None,
    ) -> None:
        """``monitor``: "auto" follows runs in-process unless another process holds the monitor lock
        (then the history is only read on the timer); "check" never follows but, like `eorch runs`, brings the
        active runs' status up to date every ``STATUS_CHECK_S`` when no monitor is running; "off" only reads."""
        super().__init__()
        self.ctx = ctx
        self.clock = clock
        self.refresh_s = max(0.05, refresh_s)
        self.monitor_mode = monitor
        self.monitor_state = "off"
        self.monitor_detail = ""
        self.runs: tuple[RunView, ...] = ()
        self.session_alerts: list[AlertRow] = []
        self._statuses: dict[str, str] | None = None
        self._open_run = open_run
        self.alerts_from_monitor = False  # orchestrator.alerts raises them; else the app diffs snapshots

    # ------------------------------------------------------------------------------------------ life

    def on_mount(self) -> None:
        from tui.screens.runs import RunsScreen

        self.push_screen(RunsScreen())
        if self._open_run:
            from tui.screens.run_detail import RunDetailScreen

            self.push_screen(RunDetailScreen(self._open_run))
        self.refresh_runs()
        self.set_interval(self.refresh_s, self.refresh_runs, name="runs-refresh")
        if self.monitor_mode == "auto":
            self.follow_runs()
        elif self.monitor_mode == "check":
            self.check_status()
            self.set_interval(STATUS_CHECK_S, self.check_status, name="status-check")

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Launch a run", "Pick a host, a command or a job spec, and start it", self.action_launch)
        yield SystemCommand("Hosts", "Reachability, GPUs and free memory per host", self.action_hosts)
        yield SystemCommand("History", "Search and filter past runs", self.action_history)
        yield SystemCommand("Alerts", "Alerts raised while watching", self.action_alerts)

    def action_launch(self) -> None:
        from tui.screens.launch import LaunchScreen

        self.push_screen(LaunchScreen())

    def action_hosts(self) -> None:
        from tui.screens.hosts import HostsScreen

        self.push_screen(HostsScreen())

    def action_history(self) -> None:
        from tui.screens.history import HistoryScreen

        self.push_screen(HistoryScreen())

    def action_toggle_keys(self) -> None:
        """`?`: the keys of the current view (Textual's key panel), or hide it again."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_alerts(self) -> None:
        from tui.screens.alerts import AlertsScreen

        if not isinstance(self.screen, AlertsScreen):
            self.push_screen(AlertsScreen())

    def open_run(self, run_id: str) -> None:
        from tui.screens.run_detail import RunDetailScreen

        self.push_screen(RunDetailScreen(run_id))

    # ------------------------------------------------------------------------------------------ runs

    @property
    def monitor_running(self) -> bool:
        """Whether some process follows the runs (this one or another), as far as this app knows."""
        return self.monitor_state in ("following", "read-only")

    @work(thread=True, exclusive=True, group="runs-refresh")
    def refresh_runs(self) -> None:
        self.post_message(RunsLoaded(data.load_runs(self.ctx, monitor_running=self.monitor_running)))

    @work(exclusive=True, group="status-check")
    async def check_status(self) -> None:
        """One liveness round for the active runs when no monitor follows them (orchestrator.refresh)."""
        from orchestrator.refresh import bring_up_to_date
        from orchestrator.services import runs

        active = runs.active_ids(self.ctx)
        freshness = await bring_up_to_date(self.ctx, active, wait_s=0)
        state = "read-only" if freshness.monitor_running else "checked"
        detail = "another process follows the runs" if freshness.monitor_running else "status checked on the hosts"
        self.post_message(MonitorStateChanged(state, detail))

    @on(RunsLoaded)
    def _runs_loaded(self, message: RunsLoaded) -> None:
        previous, self._statuses = self._statuses, {r.id: r.status for r in message.runs}
        self.runs = message.runs
        if previous is not None and not self.alerts_from_monitor:
            for run in message.runs:
                old = previous.get(run.id)
                if old is not None and old != run.status and run.terminal:
                    self.post_message(self._run_ended_alert(run))
        now = self.clock()
        for screen in self.screen_stack:
            screen.post_message(RunsRefreshed(message.runs, now))

    @staticmethod
    def _run_ended_alert(run: RunView) -> AlertRaised:
        body = f"{run.name} on {run.host}"
        if run.exit_code is not None:
            body += f", exit {run.exit_code}"
        if run.cause:
            body += f" — {run.cause}"
        return AlertRaised(f"run {run.id} {run.status}", body, ALERT_SEVERITY.get(run.status, "warning"), run.id)

    @on(AlertRaised)
    def _alert_raised(self, message: AlertRaised) -> None:
        self.session_alerts.insert(0, AlertRow(message.title, message.body, message.severity, self.clock(),
                                               message.run_id))
        self.notify(message.body, title=message.title, severity=message.severity,  # type: ignore[arg-type]
                    timeout=10 if message.severity == "error" else 5)
        if message.severity == "error":
            self.bell()

    # --------------------------------------------------------------------------------------- monitor

    def _relay(self, notice: Notice) -> None:
        """Monitor listener: runs on this app's event loop; it only posts."""
        self.post_message(MonitorNoticed(notice))

    @work(exclusive=True, group="monitor")
    async def follow_runs(self) -> None:
        """Follow runs in-process while we hold the monitor lock; otherwise read the history and retry."""
        try:
            from orchestrator.errors import MonitorBusy
            from orchestrator.monitor import Monitor
            from orchestrator.monitorlock import MonitorLock
        except ImportError as err:
            self.post_message(MonitorStateChanged("off", f"monitor unavailable: {err}"))
            return
        lock = MonitorLock(self.ctx.settings.monitor_lock)
        while True:
            try:
                lock.acquire(wait_s=0)  # never block the UI; a refresh's short hold is retried below
            except MonitorBusy as err:
                self.post_message(MonitorStateChanged("read-only", str(err)))
                await asyncio.sleep(TAKEOVER_RETRY_S)
                continue
            try:
                self.post_message(MonitorStateChanged("following", "this window records the runs"))
                monitor = Monitor(self.ctx, listeners=[self._relay, *self._alert_listeners()])
                await monitor.run(forever=True)
            finally:
                lock.release()

    def _alert_listeners(self) -> list[Callable[[Notice], None]]:
        """Alert rules and delivery (orchestrator.alerts) when present; their alerts come back as toasts.

        The bell is rung by the app (a raw BEL from a listener would land in the middle of the screen)."""
        try:
            from orchestrator.alerts import monitor_listeners
        except ImportError:
            return []
        self.alerts_from_monitor = True
        return list(monitor_listeners(self.ctx, bell=False, on_alert=self._relay_alert))

    def _relay_alert(self, alert: Any) -> None:
        kind = str(getattr(alert.kind, "value", alert.kind))
        self.post_message(AlertRaised(alert.title, alert.body, ALERT_SEVERITY.get(kind, "information"),
                                      alert.run_id))

    @on(MonitorStateChanged)
    def _monitor_state(self, message: MonitorStateChanged) -> None:
        self.monitor_state, self.monitor_detail = message.state, message.detail
        self.refresh_runs()

    @on(MonitorNoticed)
    def _monitor_noticed(self, message: MonitorNoticed) -> None:
        notice = message.notice
        if isinstance(notice, HostReachabilityChanged) and not self.alerts_from_monitor:
            if notice.reachable:
                self.post_message(AlertRaised(f"host {notice.host} reachable again", "following resumes",
                                              "information"))
            else:
                self.post_message(AlertRaised(f"host {notice.host} unreachable", notice.error or "",
                                              "warning"))
        self.refresh_runs()
