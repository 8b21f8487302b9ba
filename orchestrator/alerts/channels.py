"""Alert channels: the `[alerts]` config, URL redaction, apprise and notify-send channels, and the dispatcher.

Each channel gets its own worker thread, so a slow or dead channel (retried with exponential backoff)
delays no other channel and never blocks the monitor. Each attempt is recorded on the alert's outbox row
(orchestrator.alerts.outbox) for that channel. Channel URLs carry secrets (tokens, passwords): only
``redact_url`` forms are ever printed, logged or recorded, and a hash of the URL (``url_key``) names it.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from ipaddress import ip_address
from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.alerts import rules as alertrules
from orchestrator.alerts.outbox import PendingDelivery, Target, url_key
from orchestrator.alerts.rules import AlertKind, AlertToRaise
from orchestrator.context import Context
from orchestrator.core.humanize import iso
from orchestrator.errors import ChannelFailed, ConfigError
from orchestrator.store import outbox as outbox_rows
from orchestrator.store import queries
from orchestrator.store.db import Session

log = logging.getLogger("eorch.alerts")

ENV_URLS = "EORCH_ALERT_URLS"
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
    # A delivery still pending when a monitor starts (the last one was killed before sending it) is sent
    # then if the alert is at most this old, else marked expired.
    resend_window_minutes: float = Field(60.0, ge=0)

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
    """Only the scheme and what of the host cannot be a token survive: `slack://T0k3n/…` → `slack://…`,
    `json://u:p@127.0.0.1:1/x?a=b` → `json://127.0.0.1`, `json://T0k3n.hooks.example.com` → `json://….example.com`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "<unreadable url>"
    scheme = parts.scheme or "?"
    return f"{scheme}://{_public_part_of_host(host)}"


def _public_part_of_host(host: str) -> str:
    if host == "localhost":
        return host
    try:
        ip_address(host)
        return host
    except ValueError:
        pass
    # Services put tokens where the host goes (slack, discord, tgram, ntfy topics: no dots), and a webhook's
    # token can be a subdomain (`SECRET.hooks.example`): only the domain itself (the last two labels) is kept.
    labels = host.split(".")
    if len(labels) < 2 or not all(part and len(part) < 64 for part in labels):
        return "…"
    return ("…." if len(labels) > 2 else "") + ".".join(labels[-2:])


# ---------------------------------------------------------------------------------------------- channels


class Channel(Protocol):
    name: str  # printable: redacted
    key: str  # stable across restarts, reveals nothing: alertoutbox.url_key(url) or the program
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
        self.key = url_key(entry.url)
        self.kinds: Sequence[str] | None = entry.kinds
        self._apprise = apprise.Apprise()
        if not self._apprise.add(entry.url):
            raise ConfigError(f"alert URL {self.name} is not a URL apprise understands")

    def send(self, alert: AlertToRaise) -> None:
        import apprise

        notify_type = apprise.NotifyType(_NOTIFY_TYPES.get(alert.kind, "info"))
        if not self._apprise.notify(body=alert.body, title=alert.title, notify_type=notify_type):
            raise ChannelFailed("the service did not accept the notification")


class DesktopChannel:
    name = key = "notify-send"
    kinds: Sequence[str] | None = None

    def __init__(self, program: str) -> None:
        self.program = program

    def send(self, alert: AlertToRaise) -> None:
        urgency = "critical" if alert.kind in (AlertKind.FAILED, AlertKind.LOST) else "normal"
        try:
            proc = subprocess.run([self.program, "-a", "eorch", "-u", urgency, alert.title, alert.body],
                                  capture_output=True, timeout=10, check=False)
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
                "at": iso(self.at, "milliseconds")}


class _ChannelWorker(threading.Thread):
    """Delivers one channel's alerts in order, retrying each with exponential backoff."""

    def __init__(self, channel: Channel, config: AlertsConfig, dispatcher: Dispatcher) -> None:
        super().__init__(name=f"alerts-{channel.name}", daemon=True)
        self.channel = channel
        self.config = config
        self.dispatcher = dispatcher
        self.queue: queue.Queue[tuple[int | None, AlertToRaise]] = queue.Queue()

    def run(self) -> None:
        while True:
            delivery_id, alert = self.queue.get()
            try:
                self.dispatcher.finished(delivery_id, self.deliver(alert, delivery_id))
            finally:
                self.queue.task_done()

    def deliver(self, alert: AlertToRaise, delivery_id: int | None = None) -> Delivery:
        delay = self.config.backoff_s
        error = "not attempted"
        for attempt in range(1, self.config.retries + 1):
            try:
                self.channel.send(alert)
                return Delivery(self.channel.name, True, attempt, None, queries.utcnow())
            except ChannelFailed as err:
                error = str(err)
            except Exception as err:  # noqa: BLE001 - a channel library bug must not kill the worker
                error = f"{err.__class__.__name__}"
            log.warning("alert %s to %s: attempt %d/%d failed: %s", alert.kind.value, self.channel.name,
                        attempt, self.config.retries, error)
            final = attempt == self.config.retries
            self.dispatcher.attempt_failed(delivery_id, error, final=final)
            if not final:
                time.sleep(delay)
                delay = min(delay * 2, self.config.backoff_max_s)
        log.error("alert %s to %s: giving up after %d attempts", alert.kind.value, self.channel.name,
                  self.config.retries)
        return Delivery(self.channel.name, False, self.config.retries, error, queries.utcnow())


class Dispatcher:
    """One worker thread per channel; every attempt is recorded on the delivery's outbox row."""

    def __init__(self, ctx: Context | None, channels: Sequence[Channel], config: AlertsConfig) -> None:
        self.ctx = ctx
        self.config = config
        self._lock = threading.Lock()
        self._in_flight: set[int] = set()
        self.results: list[Delivery] = []
        self.workers = [_ChannelWorker(c, config, self) for c in channels]
        for worker in self.workers:
            worker.start()

    def targets(self, kind: AlertKind) -> list[Target]:
        """The channels that take alerts of this kind (an alert gets one outbox row for each)."""
        return [Target(w.channel.key, w.channel.name) for w in self.workers
                if alertrules.kind_allowed(kind, w.channel.kinds)]

    def dispatch(self, alert: AlertToRaise, outbox: Mapping[str, int] | None = None) -> None:
        """Queue the alert for its channels: those in ``outbox`` (channel key → delivery row), or, for an
        alert that is not recorded (``eorch alerts test``), every channel that takes its kind."""
        for worker in self.workers:
            if outbox is None:
                if alertrules.kind_allowed(alert.kind, worker.channel.kinds):
                    worker.queue.put((None, alert))
            elif worker.channel.key in outbox:
                self._queue(worker, outbox[worker.channel.key], alert)

    def redeliver(self, pending: PendingDelivery) -> bool:
        """Queue a delivery left pending by an earlier monitor; False if its channel is not configured here
        (or it is already queued)."""
        for worker in self.workers:
            if worker.channel.key == pending.channel_key:
                return self._queue(worker, pending.delivery_id, pending.alert)
        return False

    def _queue(self, worker: _ChannelWorker, delivery_id: int, alert: AlertToRaise) -> bool:
        with self._lock:
            if delivery_id in self._in_flight:
                return False
            self._in_flight.add(delivery_id)
        worker.queue.put((delivery_id, alert))
        return True

    def flush(self, timeout: float = FLUSH_AT_EXIT_S) -> bool:
        """Wait until every queued alert was delivered or given up on; False on timeout."""
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            while worker.queue.unfinished_tasks:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
        return True

    def attempt_failed(self, delivery_id: int | None, error: str, *, final: bool) -> None:
        now = queries.utcnow()
        self._write(delivery_id, lambda s, d: outbox_rows.attempt_failed(s, d, error, now, final=final))

    def finished(self, delivery_id: int | None, delivery: Delivery) -> None:
        with self._lock:
            self.results.append(delivery)
        if delivery.ok:
            self._write(delivery_id, lambda s, d: outbox_rows.attempt_sent(s, d, delivery.at))
        if delivery_id is not None:
            with self._lock:
                self._in_flight.discard(delivery_id)

    def _write(self, delivery_id: int | None, change: Callable[[Session, int], None]) -> None:
        if self.ctx is None or delivery_id is None:
            return
        try:
            with self.ctx.db() as s:
                change(s, delivery_id)
        except Exception:  # recording is best effort; a delivery left pending is re-sent by the next monitor
            log.exception("could not record the delivery %s of an alert", delivery_id)
