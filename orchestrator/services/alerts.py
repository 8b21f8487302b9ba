"""Alerts raised, as `eorch alerts` and the TUI's alerts screen list them: newest first, with each delivery."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from orchestrator.alerts import outbox as alertoutbox
from orchestrator.context import Context
from orchestrator.core.humanize import iso
from orchestrator.store import outbox as outbox_rows
from orchestrator.store import queries
from orchestrator.store.models import Alert, AlertDelivery


@dataclass(frozen=True, slots=True)
class AlertView:
    id: int
    kind: str
    run_id: str | None
    host: str | None
    created_at: datetime
    title: str
    body: str
    dedup_key: str | None
    deliveries: tuple[dict[str, Any], ...] = ()  # as `outbox_rows.delivery_json`

    @property
    def delivery(self) -> str:
        """sent / pending / failed / expired / none: the worst state among the deliveries."""
        return alertoutbox.overall_state(self.deliveries)

    @property
    def delivery_detail(self) -> str:
        """One line per channel."""
        return "\n".join(alertoutbox.describe(d) for d in self.deliveries)

    def record(self) -> dict[str, Any]:
        """The alert as `eorch alerts --json` prints it."""
        return {"id": self.id, "kind": self.kind, "run_id": self.run_id, "host": self.host,
                "created_at": iso(self.created_at, "milliseconds"), "title": self.title, "body": self.body,
                "dedup_key": self.dedup_key, "delivery": self.delivery, "deliveries": list(self.deliveries)}


def recent(ctx: Context, *, run: str | None = None, kind: str | None = None, state: str | None = None,
           limit: int = 100) -> list[AlertView]:
    """Alerts newest first: of one run (id, prefix or name), of one kind, with a delivery in one state."""
    with ctx.db() as s:
        stmt = select(Alert).order_by(Alert.created_at.desc(), Alert.id.desc()).limit(limit)
        if run:
            stmt = stmt.where(Alert.run_id == queries.get_run(s, run).id)
        if kind:
            stmt = stmt.where(Alert.kind == kind)
        if state:
            stmt = stmt.where(Alert.id.in_(select(AlertDelivery.alert_id).where(AlertDelivery.state == state)))
        rows = list(s.scalars(stmt))
        deliveries = outbox_rows.deliveries_of(s, [a.id for a in rows])
        return [AlertView(a.id, a.kind, a.run_id, a.host, a.created_at, a.title, a.body, a.dedup_key,
                          tuple(deliveries[a.id])) for a in rows]
