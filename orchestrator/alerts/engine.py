"""Alert dispatch: evaluate the rules on each monitor notice, record each alert once, deliver it everywhere.

``monitor_listeners(ctx, bell=...)`` gives the monitor a listener (``AlertEngine``). For each notice it reads
a snapshot of the run, asks ``alertrules`` what to raise, and inserts each alert under its unique
``dedup_key``: an insert that conflicts means the alert was already raised (by this or an earlier
monitor), so rules never raise it twice. In the same transaction each channel that takes the alert gets a
``pending`` outbox row (orchestrator.alerts.outbox). New alerts go to the bell / TUI callback at once, and to
the channels through the ``Dispatcher`` (orchestrator.alerts.channels), which never blocks or raises into the
monitor and marks each row sent or failed. ``on_monitor_start`` (a monitor calls it once it holds the lock)
re-sends the deliveries an earlier monitor left pending. ``tick`` (called by the monitor's loop) checks the
time-based rules: stalls and long host outages.
"""

from __future__ import annotations

import atexit
import logging
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from orchestrator.alerts import outbox as alertoutbox
from orchestrator.alerts import rules as alertrules
from orchestrator.alerts.channels import (
    Delivery,
    Dispatcher,
    configured_channels,
    load_alerts_config,
)
from orchestrator.alerts.rules import AlertKind, AlertToRaise, HostSnapshot, RunFacts, RunSnapshot
from orchestrator.context import Context
from orchestrator.core.notices import HostReachabilityChanged, Notice, RunProgressed, RunStatusChanged
from orchestrator.errors import HistoryReadOnly
from orchestrator.logparse.inert import inert_line
from orchestrator.services.runview import RunView, view_of
from orchestrator.store import outbox as outbox_rows
from orchestrator.store import queries

log = logging.getLogger("eorch.alerts")

TICK_INTERVAL_S = 5.0

# ---------------------------------------------------------------------------------------------- the engine


class AlertEngine:
    """The monitor listener: notices in, alerts recorded once and handed to the bell, the TUI and the channels."""

    def __init__(self, ctx: Context, dispatcher: Dispatcher, *, bell: bool = False,
                 on_alert: Callable[[AlertToRaise], None] | None = None,
                 clock: Callable[[], datetime] = queries.utcnow) -> None:
        self.ctx = ctx
        self.dispatcher = dispatcher
        self.bell = bell
        self.on_alert = on_alert
        self.clock = clock
        self.monitor_cfg = ctx.settings.config.monitor
        self._last_tick = 0.0
        self._reconnected_at: dict[str, datetime] = {}
        self._lost_hosts: set[str] = set()
        self._started_at: datetime | None = None
        self.resent: list[alertoutbox.PendingDelivery] = []

    def on_monitor_start(self, monitor: Any = None) -> None:
        """Called by a monitor as it starts (holding the monitor lock): re-send what an earlier one left pending."""
        self._started_at = self.clock()
        try:
            self.resend_pending()
        except HistoryReadOnly:  # not an alert problem: the monitor cannot record anything either
            raise
        except Exception:  # an alert problem must never stop the monitor
            log.exception("re-sending pending alerts failed")

    def resend_pending(self) -> list[alertoutbox.PendingDelivery]:
        """Queue every pending delivery within the re-send window again; mark older ones expired."""
        window = timedelta(minutes=self.dispatcher.config.resend_window_minutes)
        with self.ctx.db() as s:
            pending, expired = outbox_rows.take_over(s, self.clock(), window)
        if expired:
            log.warning("%d alert deliveries left pending by an earlier monitor are older than %g min: marked "
                        "expired, not sent (see `eorch alerts --state expired`)", expired, window.total_seconds() / 60)
        resent = [p for p in pending if self.dispatcher.redeliver(p)]
        if resent:
            log.info("re-sending %d alert deliveries left pending by an earlier monitor", len(resent))
        if len(resent) < len(pending):
            log.warning("%d pending alert deliveries are for channels not configured here; they stay pending",
                        len(pending) - len(resent))
        self.resent += resent
        return resent

    def __call__(self, notice: Notice) -> None:
        try:
            self._handle(notice)
        except HistoryReadOnly:
            raise
        except Exception:  # an alert problem must never stop the monitor
            log.exception("alert evaluation failed for %s", type(notice).__name__)

    def _handle(self, notice: Notice) -> None:
        if isinstance(notice, HostReachabilityChanged):
            # Only a link that came back after an outage gives a grace; a monitor's first connect does not
            # (the stall clock is the log's last output time, which survives monitor restarts).
            if not notice.reachable:
                self._lost_hosts.add(notice.host)
            elif notice.host in self._lost_hosts:
                self._lost_hosts.discard(notice.host)
                self._reconnected_at[notice.host] = self.clock()
            return
        if isinstance(notice, RunProgressed):
            self.evaluate_run(notice.run_id, RunFacts(events=notice.events))
        elif isinstance(notice, RunStatusChanged):
            self.evaluate_run(notice.run_id, RunFacts(new_status=notice.new))

    def evaluate_run(self, run_id: str, facts: RunFacts) -> list[AlertToRaise]:
        with self.ctx.db() as s:
            run = queries.run_row(s, run_id)
            if run is None:
                return []
            if run.status == "failed" and run.fingerprint is None:
                from orchestrator.core.history import record_fingerprint

                record_fingerprint(run)
            snapshot = self._snapshot(view_of(run))
        return self.raise_all(alertrules.evaluate(snapshot, facts, self.clock()))

    def _snapshot(self, run: RunView) -> RunSnapshot:
        activity = [t for t in (run.last_output_at, self._reconnected_at.get(run.host)) if t]
        if not self._checked_by_this_monitor(run) and self._started_at is not None:
            activity.append(self._started_at)  # until the host has told this monitor when the job last wrote
        return run.snapshot(last_activity_at=max(activity) if activity else None,
                            default_stall_minutes=self.monitor_cfg.stall_minutes)

    def tick(self, monitor: Any = None) -> None:
        """Time-based rules (stalls, long host outages), at most every few seconds."""
        now_mono = time.monotonic()
        if now_mono - self._last_tick < TICK_INTERVAL_S:
            return
        self._last_tick = now_mono
        try:
            self.check_time_rules(tuple(getattr(monitor, "run_refs", ()) or ()))
        except HistoryReadOnly:
            raise
        except Exception:
            log.exception("periodic alert check failed")

    def check_time_rules(self, run_refs: Sequence[str] = ()) -> list[AlertToRaise]:
        now = self.clock()
        raised: list[AlertToRaise] = []
        with self.ctx.db() as s:
            runs = [view_of(r) for r in queries.active_runs(s, run_refs)]
            hosts = {h.name: h for h in queries.hosts_named(s, {r.host for r in runs})}
            snapshots = [self._snapshot(r) for r in runs
                         if r.status == "running" and hosts.get(r.host) and hosts[r.host].reachable is not False]
            host_snaps = [HostSnapshot(h.name, h.reachable, h.unreachable_since, h.last_error,
                                       tuple(r.id for r in runs if r.host == h.name)) for h in hosts.values()]
        for snap in snapshots:
            reason = None if snap.muted else alertrules.stall_of(snap, (), now)
            if reason:
                raised += self.raise_all([alertrules.make_run_alert(snap, AlertKind.STALLED, now, reason)])
        for host in host_snaps:
            raised += self.raise_all(alertrules.evaluate_host(host, now, self.monitor_cfg.unreachable_minutes))
        return raised

    def _checked_by_this_monitor(self, run: RunView) -> bool:
        """Whether the run's last-output time was read from the host since this monitor started: before that, a
        fresh monitor must not read silence into a run that may have written while none was running."""
        if self._started_at is None:
            return True
        return run.checked_at is not None and run.checked_at >= self._started_at

    def raise_all(self, alerts: Sequence[AlertToRaise]) -> list[AlertToRaise]:
        """Record each alert unless its key exists; announce and dispatch only the new ones."""
        new: list[AlertToRaise] = []
        for alert in alerts:
            outbox = self._record(alert)
            if outbox is None:
                continue
            new.append(alert)
            if self.bell:
                ring_bell(alert)
            if self.on_alert is not None:
                self.on_alert(alert)
            self.dispatcher.dispatch(alert, outbox)
        return new

    def _record(self, alert: AlertToRaise) -> dict[str, int] | None:
        """Insert the alert and its pending deliveries together; None if it was raised before."""
        now = self.clock()
        with self.ctx.db() as s:
            alert_id = queries.insert_alert(s, alert, now)
            if alert_id is None:
                return None
            return outbox_rows.add_pending(s, alert_id, self.dispatcher.targets(alert.kind), now)


def ring_bell(alert: AlertToRaise, out: Any = None) -> None:
    """BEL plus an OSC 9 desktop notification, for terminals that show them; only on a terminal."""
    # The real stderr: rich's Live display redirects sys.stderr and would print the escape as text.
    out = out or sys.__stderr__
    if out is None or not out.isatty():
        return
    title = inert_line(alert.title)  # a C1 ST or an ESC in a run's name must not end the OSC early
    out.write(f"\a\x1b]9;{title}\x07")
    out.flush()


def monitor_listeners(ctx: Context, bell: bool = False,
                      on_alert: Callable[[AlertToRaise], None] | None = None) -> list[AlertEngine]:
    """The listeners a monitor (watch, daemon, TUI) runs so that alerts are raised and delivered."""
    config = load_alerts_config(ctx)
    dispatcher = Dispatcher(ctx, configured_channels(ctx), config)
    atexit.register(dispatcher.flush)
    return [AlertEngine(ctx, dispatcher, bell=bell, on_alert=on_alert)]


def send_test(ctx: Context, timeout: float = 30.0, only: str | None = None) -> list[Delivery]:
    """Send a test alert to every channel now (or to those whose key or printed name is ``only``) and wait for
    the outcome (not recorded in the history)."""
    config = load_alerts_config(ctx)
    channels = configured_channels(ctx)
    if only is not None:
        channels = [c for c in channels if only in (c.key, c.name)]
        if not channels:
            from orchestrator.errors import UsageError

            raise UsageError(f"no alert channel {only!r}: see the channels with `eorch alerts channels`")
    dispatcher = Dispatcher(None, channels, config)
    dispatcher.dispatch(alertrules.make_test_alert(queries.utcnow()))
    dispatcher.flush(timeout)
    return list(dispatcher.results)
