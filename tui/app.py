"""`eorch tui`: the dashboard app. It owns the runs snapshot, the monitor thread and the alerts.

One timer reloads the runs from the history in a thread worker and hands the snapshot to every screen
(``RunsRefreshed``). While this process holds the monitor lock the monitor runs in a thread of its own (its
own event loop and host sessions): its notices come back as messages, its followers' lines go to the log
views through the ``LogFeed``, its alerts become toasts. Otherwise the app compares each snapshot with the
last and lets ``alertrules`` (the monitor's own rules) decide the toasts. Screens get what they need in
their constructors (``ScreenDeps``); a worker's unexpected exception shows a modal (``worker_errors``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from datetime import datetime
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import get_current_worker

from orchestrator.alerts import rules as alertrules
from orchestrator.context import Context
from orchestrator.core.clock import utcnow
from orchestrator.core.notices import LogLinesRead, Notice
from orchestrator.services.runview import RunView
from tui import data
from tui.data import AlertRow
from tui.deps import ScreenDeps
from tui.logfeed import LogFeed
from tui.messages import (
    AlertRaised,
    MonitorNoticed,
    MonitorStateChanged,
    RunOpenRequested,
    RunsLoaded,
    RunsRefreshed,
    RunsRefreshRequested,
)
from tui.worker_errors import ReportsWorkerErrors

__all__ = ["EorchApp", "RunsRefreshed"]

ALERT_SEVERITY = {"failed": "error", "lost": "error", "cancelled": "warning", "succeeded": "information",
                  "stalled": "warning", "host_unreachable": "warning"}
TAKEOVER_RETRY_S = 10.0
STATUS_CHECK_S = 15.0
CANCEL_POLL_S = 0.1  # how often a thread's event loop looks whether its worker was cancelled


class EorchApp(ReportsWorkerErrors, App[None]):
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
        self._raised: set[str] = set()  # dedup keys of the alerts the snapshot diff raised
        self._open_run = open_run
        self.alerts_from_monitor = False  # the monitor's alert engine raises them; else the snapshot diff
        self.log_feed = LogFeed(ctx.session)
        self.deps = ScreenDeps(ctx, clock, lambda: self.monitor_state, self.log_feed)

    # ------------------------------------------------------------------------------------------ life

    def on_mount(self) -> None:
        from tui.screens.runs import RunsScreen

        self.push_screen(RunsScreen(self.deps))
        if self._open_run:
            self.open_run(self._open_run)
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
        yield SystemCommand("Merged log", "All active runs' lines as they arrive", self.action_merged_log)

    def action_launch(self) -> None:
        from tui.screens.launch import LaunchScreen

        self.push_screen(LaunchScreen(self.deps))

    def action_hosts(self) -> None:
        from tui.screens.hosts import HostsScreen

        self.push_screen(HostsScreen(self.deps))

    def action_history(self) -> None:
        from tui.screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.deps))

    def action_merged_log(self) -> None:
        from tui.screens.merged_log import MergedLogScreen

        if not isinstance(self.screen, MergedLogScreen):
            self.push_screen(MergedLogScreen(self.deps, self.runs))

    def action_toggle_keys(self) -> None:
        """`?`: the keys of the current view (Textual's key panel), or hide it again."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_alerts(self) -> None:
        from tui.screens.alerts import AlertsScreen

        if not isinstance(self.screen, AlertsScreen):
            self.push_screen(AlertsScreen(self.deps, self.session_alerts))

    def open_run(self, run_id: str) -> None:
        from tui.screens.run_detail import RunDetailScreen

        self.push_screen(RunDetailScreen(self.deps, run_id))

    @on(RunOpenRequested)
    def _open_requested(self, message: RunOpenRequested) -> None:
        self.open_run(message.run_id)

    @on(RunsRefreshRequested)
    def _refresh_requested(self) -> None:
        self.refresh_runs()

    # ------------------------------------------------------------------------------------------ runs

    @property
    def monitor_running(self) -> bool:
        """Whether some process follows the runs (this one or another), as far as this app knows."""
        return self.deps.monitor_running

    @work(thread=True, exclusive=True, group="runs-refresh", exit_on_error=False)
    def refresh_runs(self) -> None:
        self.post_message(RunsLoaded(data.load_runs(self.ctx, monitor_running=self.monitor_running)))

    @work(thread=True, exclusive=True, group="status-check", exit_on_error=False)
    def check_status(self) -> None:
        """One liveness round for the active runs when no monitor follows them (orchestrator.monitoring.refresh)."""
        from orchestrator.monitoring.refresh import bring_up_to_date
        from orchestrator.services import runs

        active = runs.active_ids(self.ctx)

        async def check(ctx: Context) -> None:
            freshness = await bring_up_to_date(ctx, active, wait_s=0)
            state = "read-only" if freshness.monitor_running else "checked"
            detail = "another process follows the runs" if freshness.monitor_running else "status checked on the hosts"
            self.post_message(MonitorStateChanged(state, detail))  # before the sessions close: that takes a while

        _run_until_cancelled(check, self.ctx)

    @on(RunsLoaded)
    def _runs_loaded(self, message: RunsLoaded) -> None:
        previous, self._statuses = self._statuses, {r.id: r.status for r in message.runs}
        self.runs = message.runs
        now = self.clock()
        if previous is not None and not self.alerts_from_monitor:
            for run in message.runs:
                if previous.get(run.id, run.status) != run.status:
                    for alert in self._rule_alerts(run, now):
                        self.post_message(alert)
        for screen in self.screen_stack:
            screen.post_message(RunsRefreshed(message.runs, now))

    def _rule_alerts(self, run: RunView, now: datetime) -> list[AlertRaised]:
        """What ``alertrules`` (the monitor's rules) raise for a run whose status just changed, once each."""
        snapshot = run.snapshot(last_activity_at=run.last_output_at,
                                default_stall_minutes=self.ctx.settings.config.monitor.stall_minutes)
        raised = []
        for alert in alertrules.evaluate(snapshot, alertrules.RunFacts(new_status=run.status), now):
            if alert.dedup_key not in self._raised:
                self._raised.add(alert.dedup_key)
                raised.append(AlertRaised(f"run {run.id} {alert.kind.value}", alert.body,
                                          ALERT_SEVERITY.get(alert.kind.value, "information"), run.id))
        return raised

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
        """Monitor listener: runs in the monitor's thread; it only posts (thread-safe)."""
        self.post_message(MonitorNoticed(notice))

    @work(thread=True, exclusive=True, group="monitor", exit_on_error=False)
    def follow_runs(self) -> None:
        """Follow runs in this thread while we hold the monitor lock; otherwise read the history and retry."""
        _run_until_cancelled(self._follow, self.ctx)

    async def _follow(self, ctx: Context) -> None:
        from orchestrator.errors import MonitorBusy
        from orchestrator.monitoring.lock import follow_or_read
        from orchestrator.monitoring.monitor import Monitor

        async def follow() -> None:
            self.post_message(MonitorStateChanged("following", "this window records the runs"))
            await Monitor(ctx, listeners=[self._relay, *self._alert_listeners(ctx)]).run(forever=True)

        async def read(busy: MonitorBusy) -> None:
            self.post_message(MonitorStateChanged("read-only", str(busy)))
            await asyncio.sleep(TAKEOVER_RETRY_S)

        while True:  # wait_s=0: never block the UI; a refresh's short hold is retried
            await follow_or_read(ctx.settings.monitor_lock, follow, read, wait_s=0)

    def _alert_listeners(self, ctx: Context) -> list[Callable[[Notice], None]]:
        """Alert rules and delivery (orchestrator.alerts); their alerts come back as toasts.

        The bell is rung by the app (a raw BEL from a listener would land in the middle of the screen)."""
        from orchestrator.alerts.engine import monitor_listeners

        self.alerts_from_monitor = True
        return list(monitor_listeners(ctx, bell=False, on_alert=self._relay_alert))

    def _relay_alert(self, alert: Any) -> None:
        kind = str(getattr(alert.kind, "value", alert.kind))
        self.post_message(AlertRaised(alert.title, alert.body, ALERT_SEVERITY.get(kind, "information"),
                                      alert.run_id))

    @on(MonitorStateChanged)
    def _monitor_state(self, message: MonitorStateChanged) -> None:
        self.monitor_state, self.monitor_detail = message.state, message.detail
        self.log_feed.following = message.state == "following"
        self.refresh_runs()

    @on(MonitorNoticed)
    def _monitor_noticed(self, message: MonitorNoticed) -> None:
        if isinstance(message.notice, LogLinesRead):
            self.log_feed.publish(message.notice)  # lines only: the runs did not change
            return
        self.refresh_runs()


def _run_until_cancelled(main: Callable[[Context], Coroutine[Any, Any, Any]], ctx: Context) -> Any:
    """Run ``main`` in an event loop of this (worker) thread, with host sessions of its own, until it ends
    or the worker is cancelled (the app quits); the sessions are closed either way. None when cancelled."""
    worker = get_current_worker()
    own = Context(ctx.settings, ctx.sessionmaker)

    async def watched() -> Any:
        task = asyncio.ensure_future(main(own))
        try:
            while not task.done():
                if worker.is_cancelled:
                    task.cancel()
                await asyncio.wait({task}, timeout=CANCEL_POLL_S)
            return None if task.cancelled() else task.result()
        finally:
            await own.close()

    return asyncio.run(watched())
