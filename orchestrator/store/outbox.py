"""The alert outbox's rows: a pending delivery per channel, each attempt's outcome, take-over after a restart.

What the outbox promises (at least once until a channel accepts it) is told in `orchestrator.alerts.outbox`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from orchestrator.alerts.outbox import ERROR_MAX, EXPIRED, FAILED, PENDING, SENT, PendingDelivery, Target
from orchestrator.alerts.rules import AlertKind, AlertToRaise
from orchestrator.core.humanize import iso
from orchestrator.store.models import Alert, AlertDelivery

MS = "milliseconds"  # deliveries happen many to a second


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


def delivery_json(row: AlertDelivery) -> dict[str, Any]:
    return {"channel": row.channel, "state": row.state, "ok": row.state == SENT, "attempts": row.attempts,
            "error": row.last_error, "created_at": iso(row.created_at, MS), "last_attempt_at": iso(row.last_attempt_at, MS),
            "sent_at": iso(row.sent_at, MS)}


def deliveries_of(s: Session, alert_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Each alert's deliveries (as ``delivery_json``), in the order they were recorded."""
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in alert_ids}
    if alert_ids:
        rows = s.scalars(select(AlertDelivery).where(AlertDelivery.alert_id.in_(alert_ids))
                         .order_by(AlertDelivery.alert_id, AlertDelivery.id))
        for row in rows:
            found[row.alert_id].append(delivery_json(row))
    return found
