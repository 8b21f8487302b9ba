"""Alert dispatch: evaluate the rules on each monitor notice, record each alert once, deliver it everywhere.

``monitor_listeners(ctx, bell=...)`` gives the monitor a listener (``AlertEngine``). For each notice it reads
a snapshot of the run, asks ``alertrules`` what to raise, and inserts each alert under its unique
``dedup_key``: an insert that conflicts means the alert was already raised (by this or an earlier
monitor), so restarts never resend. New alerts go to the bell / TUI callback at once, and to each channel's
own worker thread (apprise URL, notify-send), which retries with backoff and records the outcome; a slow
or dead channel delays nobody else and never raises into the monitor. ``tick`` (called by the monitor's
loop) checks the time-based rules: stalls and long host outages.

Channel URLs carry secrets (tokens, passwords): only ``redact_url`` forms are ever printed or logged.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from ipaddress import ip_address
from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select, update
from sqlalchemy.dialects.sqlite import insert

from orchestrator import alertrules
from orchestrator.alertrules import AlertKind, AlertToRaise, HostSnapshot, RunFacts, RunSnapshot
from orchestrator.context import Context
from orchestrator.errors import ConfigError
from orchestrator.notices import HostReachabilityChanged, Notice, RunProgressed, RunStatusChanged
from orchestrator.store import queries
from orchestrator.store.models import Alert, Event, Host, Run

log = logging.getLogger("eorch.alerts")

ENV_URLS = "EORCH_ALERT_URLS"
TICK_INTERVAL_S = 5.0
FLUSH_AT_EXIT_S = 15.0

# ------------------------------------------------------------------------------------------------ config


class ChannelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str
    kinds: list[str] | None = Field(None, description="only these alert kinds (default: all)")

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str] | None) -> list[str] | None:
        unknown = sorted(set(kinds or ()) - set(alertrules.ALL_KINDS))
        if unknown:
            raise ValueError(f"unknown alert kinds {unknown}; known: {', '.join(alertrules.ALL_KINDS)}")
        return kinds


class AlertsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    urls: list[str | ChannelEntry] = Field(default_factory=list)
    desktop: bool = True
    retries: int = Field(4, ge=1, le=20)
    backoff_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)

    def entries(self, env: Mapping[str, str]) -> list[ChannelEntry]:
        entries = [u if isinstance(u, ChannelEntry) else ChannelEntry(url=u) for u in self.urls]
        entries += [ChannelEntry(url=u) for u in env.get(ENV_URLS, "").split()]
        return entries


def load_alerts_config(ctx: Context) -> AlertsConfig:
    try:
        return AlertsConfig.model_validate(ctx.settings.config.alerts)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        # The message never echoes the input: it may be a URL with a token in it.
        raise ConfigError(f"{ctx.settings.config_path}: alerts.{where}: {first['msg']}") from None


def redact_url(url: str) -> str:
    """Only the scheme and a real host name survive: `slack://T0k3n/…` → `slack://…`, `json://h:1/x?a=b` → `json://h`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "<unreadable url>"
    scheme = parts.scheme or "?"
    return f"{scheme}://{host}" if _looks_like_hostname(host) else f"{scheme}://…"


def _looks_like_hostname(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ip_address(host)
        return True
    except ValueError:
        pass
    # Services that put tokens where the host goes (slack, discord, tgram, ntfy topics) have no dots there.
    return "." in host and all(part and len(part) < 64 for part in host.split("."))


# ---------------------------------------------------------------------------------------------- channels


class ChannelFailed(Exception):
    """One delivery attempt failed; the message is safe to log (no URL, no secret)."""


class Channel(Protocol):
    name: str
    kinds: Sequence[str] | None

    def send(self, alert: AlertToRaise) -> None: ...


_NOTIFY_TYPES = {
    AlertKind.FAILED: "failure", AlertKind.LOST: "failure", AlertKind.SUCCEEDED: "success",
    AlertKind.STALLED: "warning", AlertKind.HOST_UNREACHABLE: "warning",
}


class AppriseChannel:
    def __init__(self, entry: ChannelEntry) -> None:
        import apprise

        self.name = redact_url(entry.url)
        self.kinds = entry.kinds
        self._apprise = apprise.Apprise()
        if not self._apprise.add(entry.url):
            raise ConfigError(f"alert URL {self.name} is not a URL apprise understands")

    def send(self, alert: AlertToRaise) -> None:
        import apprise

        notify_type = apprise.NotifyType(_NOTIFY_TYPES.get(alert.kind, "info"))
        if not self._apprise.notify(body=alert.body, title=alert.title, notify_type=notify_type):
            raise ChannelFailed("the service did not accept the notification")


class DesktopChannel:
    name = "notify-send"
    kinds: Sequence[str] | None = None

    def __init__(self, program: str) -> None:
        self.program = program

    def send(self, alert: AlertToRaise) -> None:
        urgency = "critical" if alert.kind in (AlertKind.FAILED, AlertKind.LOST) else "normal"
        try:
            proc = subprocess.run([self.program, "-a", "eorch", "-u", urgency, alert.title, alert.body],
                                  capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ChannelFailed(f"notify-send: {err.__class__.__name__}") from err
        if proc.returncode != 0:
            raise ChannelFailed(f"notify-send exited {proc.returncode}")


def configured_channels(ctx: Context, env: Mapping[str, str] | None = None) -> list[Channel]:
    config = load_alerts_config(ctx)
    channels: list[Channel] = [AppriseChannel(e) for e in config.entries(os.environ if env is None else env)]
    program = shutil.which("notify-send")
    if config.desktop and program:
        channels.append(DesktopChannel(program))
    return channels


# -------------------------------------------------------------------------------------------- dispatcher


@dataclass(frozen=True)
class Delivery:
    channel: str
    ok: bool
    attempts: int
    error: str | None
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {"channel": self.channel, "ok": self.ok, "attempts": self.attempts, "error": self.error,
                "at": self.at.isoformat(timespec="milliseconds") + "Z"}


class _ChannelWorker(threading.Thread):
    """Delivers one channel's alerts in order, retrying each with exponential backoff."""

    def __init__(self, channel: Channel, config: AlertsConfig, record: Callable[[int | None, Delivery], None]) -> None:
        super().__init__(name=f"alerts-{channel.name}", daemon=True)
        self.channel = channel
        self.config = config
        self.record = record
        self.queue: queue.Queue[tuple[int | None, AlertToRaise]] = queue.Queue()

    def run(self) -> None:
        while True:
            alert_id, alert = self.queue.get()
            try:
                self.record(alert_id, self.deliver(alert))
            finally:
                self.queue.task_done()

    def deliver(self, alert: AlertToRaise) -> Delivery:
        delay = self.config.backoff_s
        error = "not attempted"
        for attempt in range(1, self.config.retries + 1):
            try:
                self.channel.send(alert)
                return Delivery(self.channel.name, True, attempt, None, queries.utcnow())
            except ChannelFailed as err:
                error = str(err)
            except Exception as err:  # a channel library bug must not kill the worker
                error = f"{err.__class__.__name__}"
            log.warning("alert %s to %s: attempt %d/%d failed: %s", alert.kind.value, self.channel.name,
                        attempt, self.config.retries, error)
            if attempt < self.config.retries:
                time.sleep(delay)
                delay = min(delay * 2, self.config.backoff_max_s)
        log.error("alert %s to %s: giving up after %d attempts", alert.kind.value, self.channel.name,
                  self.config.retries)
        return Delivery(self.channel.name, False, self.config.retries, error, queries.utcnow())


class Dispatcher:
    """One worker thread per channel; deliveries are recorded on the alert row as they finish."""

    def __init__(self, ctx: Context | None, channels: Sequence[Channel], config: AlertsConfig) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self.results: list[Delivery] = []
        self.workers = [_ChannelWorker(c, config, self._record) for c in channels]
        for worker in self.workers:
            worker.start()

    def dispatch(self, alert_id: int | None, alert: AlertToRaise) -> None:
        for worker in self.workers:
            if alertrules.kind_allowed(alert.kind, worker.channel.kinds):
                worker.queue.put((alert_id, alert))

    def flush(self, timeout: float = FLUSH_AT_EXIT_S) -> bool:
        """Wait until every queued alert was delivered or given up on; False on timeout."""
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            while worker.queue.unfinished_tasks:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
        return True

    def _record(self, alert_id: int | None, delivery: Delivery) -> None:
        with self._lock:
            self.results.append(delivery)
            if self.ctx is None or alert_id is None:
                return
            try:
                with self.ctx.db() as s:
                    current = s.scalar(select(Alert.deliveries).where(Alert.id == alert_id)) or []
                    s.execute(update(Alert).where(Alert.id == alert_id)
                              .values(deliveries=[*current, delivery.to_json()]))
            except Exception:  # recording is best effort; the delivery itself happened
                log.exception("could not record the delivery of alert %s", alert_id)


# ---------------------------------------------------------------------------------------------- the engine


def _signature_hint(signature: str | None) -> str | None:
    if not signature:
        return None
    try:
        from orchestrator.logparse import signature_hint
    except ImportError:
        return None
    hint = signature_hint(signature)
    return str(hint) if hint else None


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

    def __call__(self, notice: Notice) -> None:
        try:
            self._handle(notice)
        except Exception:  # an alert problem must never stop the monitor
            log.exception("alert evaluation failed for %s", type(notice).__name__)

    def _handle(self, notice: Notice) -> None:
        if isinstance(notice, HostReachabilityChanged):
            if notice.reachable:
                self._reconnected_at[notice.host] = self.clock()
            return
        if isinstance(notice, RunProgressed):
            self.evaluate_run(notice.run_id, RunFacts(events=notice.events))
        elif isinstance(notice, RunStatusChanged):
            self.evaluate_run(notice.run_id, RunFacts(new_status=notice.new))

    def evaluate_run(self, run_id: str, facts: RunFacts) -> list[AlertToRaise]:
        with self.ctx.db() as s:
            run = s.get(Run, run_id)
            if run is None:
                return []
            if run.status == "failed" and run.fingerprint is None:
                from orchestrator.history import record_fingerprint

                record_fingerprint(s, run)
            snapshot = self._snapshot(s, run)
        return self.raise_all(alertrules.evaluate(snapshot, facts, self.clock()))

    def _snapshot(self, s: Any, run: Run) -> RunSnapshot:
        last_event = s.scalar(select(Event.ts).where(Event.run_id == run.id).order_by(Event.id.desc()).limit(1))
        activity = [t for t in (run.last_output_at, last_event, self._reconnected_at.get(run.host)) if t]
        cause = run.root_cause or None
        signature = (cause or {}).get("signature") or run.signature
        stall = (run.spec or {}).get("stall_minutes") if isinstance(run.spec, dict) else None
        return RunSnapshot(
            run_id=run.id, name=run.name, host=run.host, status=run.status, phase=run.phase, kind=run.kind,
            shards_done=run.shards_done, shards_total=run.shards_total, exit_code=run.exit_code, root_cause=cause,
            hint=_signature_hint(signature), started_at=run.started_at,
            last_activity_at=max(activity) if activity else None,
            stall_minutes=float(stall) if stall else self.monitor_cfg.stall_minutes,
        )

    def tick(self, monitor: Any = None) -> None:
        """Time-based rules (stalls, long host outages), at most every few seconds."""
        now_mono = time.monotonic()
        if now_mono - self._last_tick < TICK_INTERVAL_S:
            return
        self._last_tick = now_mono
        try:
            self.check_time_rules(tuple(getattr(monitor, "run_refs", ()) or ()))
        except Exception:
            log.exception("periodic alert check failed")

    def check_time_rules(self, run_refs: Sequence[str] = ()) -> list[AlertToRaise]:
        now = self.clock()
        raised: list[AlertToRaise] = []
        with self.ctx.db() as s:
            runs = queries.active_runs(s, run_refs)
            hosts = {h.name: h for h in s.scalars(select(Host).where(Host.name.in_({r.host for r in runs})))}
            snapshots = [self._snapshot(s, r) for r in runs
                         if r.status == "running" and hosts.get(r.host) and hosts[r.host].reachable is not False]
            host_snaps = [HostSnapshot(h.name, h.reachable, h.unreachable_since, h.last_error,
                                       tuple(r.id for r in runs if r.host == h.name)) for h in hosts.values()]
        for snap in snapshots:
            reason = alertrules.stall_of(snap, (), now)
            if reason:
                raised += self.raise_all([alertrules.make_run_alert(snap, AlertKind.STALLED, now, reason)])
        for host in host_snaps:
            raised += self.raise_all(alertrules.evaluate_host(host, now, self.monitor_cfg.unreachable_minutes))
        return raised

    def raise_all(self, alerts: Sequence[AlertToRaise]) -> list[AlertToRaise]:
        """Record each alert unless its key exists; announce and dispatch only the new ones."""
        new: list[AlertToRaise] = []
        for alert in alerts:
            alert_id = self._record(alert)
            if alert_id is None:
                continue
            new.append(alert)
            if self.bell:
                ring_bell(alert)
            if self.on_alert is not None:
                self.on_alert(alert)
            self.dispatcher.dispatch(alert_id, alert)
        return new

    def _record(self, alert: AlertToRaise) -> int | None:
        stmt = insert(Alert).values(
            dedup_key=alert.dedup_key, kind=alert.kind.value, run_id=alert.run_id, host=alert.host,
            created_at=self.clock(), title=alert.title[:255], body=alert.body, deliveries=[],
        ).on_conflict_do_nothing(index_elements=["dedup_key"]).returning(Alert.id)
        with self.ctx.db() as s:
            return s.scalar(stmt)


def ring_bell(alert: AlertToRaise, out: Any = None) -> None:
    """BEL plus an OSC 9 desktop notification, for terminals that show them; only on a terminal."""
    out = out or sys.stderr
    if not out.isatty():
        return
    title = alert.title.replace("\x1b", "").replace("\x07", "")
    out.write(f"\a\x1b]9;{title}\x07")
    out.flush()


def monitor_listeners(ctx: Context, bell: bool = False,
                      on_alert: Callable[[AlertToRaise], None] | None = None) -> list[AlertEngine]:
    """The listeners a monitor (watch, daemon, TUI) runs so that alerts are raised and delivered."""
    config = load_alerts_config(ctx)
    dispatcher = Dispatcher(ctx, configured_channels(ctx), config)
    atexit.register(dispatcher.flush)
    return [AlertEngine(ctx, dispatcher, bell=bell, on_alert=on_alert)]


def send_test(ctx: Context, timeout: float = 30.0) -> list[Delivery]:
    """Send a test alert to every channel now and wait for the outcome (not recorded in the history)."""
    config = load_alerts_config(ctx)
    dispatcher = Dispatcher(None, configured_channels(ctx), config)
    dispatcher.dispatch(None, alertrules.make_test_alert(queries.utcnow()))
    dispatcher.flush(timeout)
    return list(dispatcher.results)
