"""The alert outbox: every delivery of an alert to a channel is a row, written before anything is sent.

An alert and one ``pending`` delivery row per channel that takes its kind are inserted in one transaction
(the alert's unique ``dedup_key`` still keeps a rule from raising it twice). The channel worker marks the row
after each attempt: ``sent`` once the channel accepted it, ``failed`` when the retries are used up (with the
last error). A monitor killed in between leaves the row ``pending``; the next monitor to start re-sends the
pending rows not older than the re-send window (``[alerts] resend_window_minutes``, default 60) and marks the
older ones ``expired``. So delivery is at least once until a channel accepts it, and a delivery marked
``sent`` is never sent again (a kill in the instant between the channel's answer and the mark is the one
window for a duplicate).

No URL is stored: a row names its channel by the redacted form and ``channel_key``, a hash of the URL, which
tells channels apart (two URLs may redact alike) and finds the configured channel again after a restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from orchestrator.alertrules import AlertKind, AlertToRaise
from orchestrator.store.models import Alert, AlertDelivery

PENDING, SENT, FAILED, EXPIRED = "pending", "sent", "failed", "expired"
STATES = (PENDING, SENT, FAILED, EXPIRED)
ERROR_MAX = 500


def url_key(url: str) -> str:
    """A stable name for a configured URL that does not reveal it."""
    return "url:" + hashlib.sha256(url.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Target:
    """A channel an alert is to be delivered to: its key and its printable (redacted) name."""

    key: str
    name: str


@dataclass(frozen=True)
class PendingDelivery:
    delivery_id: int
    channel_key: str
    alert: AlertToRaise


# ------------------------------------------------------------------------------------------------ writes


def add_pending(s: Session, alert_id: int, targets: Iterable[Target], now: datetime) -> dict[str, int]:
    """One pending row per target, in the caller's transaction (the one that inserts the alert)."""
    rows = {t.key: AlertDelivery(alert_id=alert_id, channel=t.name[:255], channel_key=t.key, state=PENDING,
                                 attempts=0, created_at=now) for t in targets}
    s.add_all(rows.values())
    s.flush()
    return {key: row.id for key, row in rows.items()}


def attempt_failed(s: Session, delivery_id: int, error: str, now: datetime, *, final: bool) -> None:
    """Count a failed attempt; ``final`` when the retries are used up (the row becomes ``failed``)."""
    values: dict[str, Any] = {"attempts": AlertDelivery.attempts + 1, "last_error": error[:ERROR_MAX],
                              "last_attempt_at": now}
    if final:
        values["state"] = FAILED
    s.execute(update(AlertDelivery).where(AlertDelivery.id == delivery_id, AlertDelivery.state == PENDING)
              .values(**values))


def attempt_sent(s: Session, delivery_id: int, now: datetime) -> None:
    s.execute(update(AlertDelivery).where(AlertDelivery.id == delivery_id)
              .values(state=SENT, attempts=AlertDelivery.attempts + 1, last_attempt_at=now, sent_at=now))


def _alert_of(row: Alert) -> AlertToRaise:
    try:
        kind = AlertKind(row.kind)
    except ValueError:
        kind = AlertKind.TEST
    return AlertToRaise(kind=kind, dedup_key=row.dedup_key, title=row.title, body=row.body, run_id=row.run_id,
                        host=row.host)


def take_over(s: Session, now: datetime, window: timedelta) -> tuple[list[PendingDelivery], int]:
    """At a monitor's start: the pending deliveries to send again, and how many were too old (now ``expired``)."""
    cutoff = now - window
    old = select(Alert.id).where(Alert.created_at < cutoff)
    expired = s.execute(
        update(AlertDelivery).where(AlertDelivery.state == PENDING, AlertDelivery.alert_id.in_(old))
        .values(state=EXPIRED, last_error=f"still pending when a monitor started more than "
                                          f"{window.total_seconds() / 60:g} min after the alert; not sent")
        .execution_options(synchronize_session=False)
    )
    rows = s.execute(select(AlertDelivery.id, AlertDelivery.channel_key, Alert)
                     .join(Alert, Alert.id == AlertDelivery.alert_id)
                     .where(AlertDelivery.state == PENDING).order_by(Alert.created_at, AlertDelivery.id))
    pending = [PendingDelivery(delivery_id, key, _alert_of(alert)) for delivery_id, key, alert in rows]
    return pending, int(getattr(expired, "rowcount", 0) or 0)


# ------------------------------------------------------------------------------------------------- reads


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="milliseconds") + "Z" if value is not None else None


def delivery_json(row: AlertDelivery) -> dict[str, Any]:
    return {"channel": row.channel, "state": row.state, "ok": row.state == SENT, "attempts": row.attempts,
            "error": row.last_error, "created_at": _iso(row.created_at), "last_attempt_at": _iso(row.last_attempt_at),
            "sent_at": _iso(row.sent_at)}


def deliveries_of(s: Session, alert_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Each alert's deliveries (as ``delivery_json``), in the order they were recorded."""
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in alert_ids}
    if alert_ids:
        rows = s.scalars(select(AlertDelivery).where(AlertDelivery.alert_id.in_(alert_ids))
                         .order_by(AlertDelivery.alert_id, AlertDelivery.id))
        for row in rows:
            found[row.alert_id].append(delivery_json(row))
    return found


def overall_state(deliveries: Sequence[dict[str, Any]]) -> str:
    """One word for an alert: the worst state among its deliveries ("none" without channels)."""
    states = {d["state"] for d in deliveries}
    for state in (FAILED, EXPIRED, PENDING, SENT):
        if state in states:
            return state
    return "none"


def describe(d: dict[str, Any]) -> str:
    """`json://127.0.0.1 sent`, `notify-send FAILED after 4 attempts: …` — never a URL (the names are redacted)."""
    state = d["state"]
    if state == SENT:
        return f"{d['channel']} sent" + (f" (attempt {d['attempts']})" if d["attempts"] > 1 else "")
    if state == PENDING:
        return f"{d['channel']} pending" + (f" ({d['attempts']} attempts so far)" if d["attempts"] else "")
    if state == FAILED:
        return f"{d['channel']} FAILED after {d['attempts']} attempts: {d['error'] or 'unknown error'}"
    return f"{d['channel']} {state.upper()} (not sent)"
