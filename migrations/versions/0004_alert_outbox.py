"""alert outbox: alert_deliveries (one row per alert and channel, with its state) replaces alerts.deliveries

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 10:00:00

Alerts were recorded, then sent, with the outcome appended to the JSON list ``alerts.deliveries``; a monitor
killed in between lost the alert. Now each delivery is a row recorded ``pending`` together with the alert and
marked ``sent``/``failed``/``expired`` later, so a new monitor can re-send what was left pending.

The upgrade turns each recorded JSON delivery into a ``sent`` or ``failed`` row (channel key ``legacy:N``:
the old records have no channel identity beyond the redacted name) and drops the column with SQLite's own
ALTER TABLE DROP COLUMN (3.35+, as 0003), so ``alerts`` is not recreated. The downgrade rebuilds the JSON
lists from the rows (every state but ``sent`` becomes ``ok: false``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_alerts = sa.table("alerts", sa.column("id", sa.Integer), sa.column("created_at", sa.DateTime),
                   sa.column("deliveries", sa.JSON))
_deliveries = sa.table(
    "alert_deliveries", sa.column("id", sa.Integer), sa.column("alert_id", sa.Integer), sa.column("channel", sa.String),
    sa.column("channel_key", sa.String), sa.column("state", sa.String), sa.column("attempts", sa.Integer),
    sa.column("last_error", sa.Text), sa.column("created_at", sa.DateTime),
    sa.column("last_attempt_at", sa.DateTime), sa.column("sent_at", sa.DateTime),
)


def _parse_at(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).removesuffix("Z")) if value else None
    except ValueError:
        return None


def upgrade() -> None:
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("alert_id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=255), nullable=False),
        sa.Column("channel_key", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_attempt_at", sa.DateTime(), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["alert_id"], ["alerts.id"], name=op.f("fk_alert_deliveries_alert_id_alerts"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_deliveries")),
        sa.UniqueConstraint("alert_id", "channel_key", name=op.f("uq_alert_deliveries_alert_id")),
    )
    with op.batch_alter_table("alert_deliveries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_deliveries_state"), ["state"], unique=False)

    conn = op.get_bind()
    rows = []
    for alert_id, created_at, deliveries in conn.execute(sa.select(_alerts.c.id, _alerts.c.created_at,
                                                                   _alerts.c.deliveries)):
        for index, d in enumerate(deliveries or []):
            at = _parse_at(d.get("at"))
            rows.append({
                "alert_id": alert_id, "channel": str(d.get("channel") or "?")[:255], "channel_key": f"legacy:{index}",
                "state": "sent" if d.get("ok") else "failed", "attempts": int(d.get("attempts") or 0),
                "last_error": d.get("error"), "created_at": created_at, "last_attempt_at": at,
                "sent_at": at if d.get("ok") else None,
            })
    if rows:
        conn.execute(_deliveries.insert(), rows)
    op.execute("ALTER TABLE alerts DROP COLUMN deliveries")


def downgrade() -> None:
    with op.batch_alter_table("alerts", recreate="never") as batch:
        batch.add_column(sa.Column("deliveries", sa.JSON(), nullable=True))
    conn = op.get_bind()
    lists: dict[int, list[dict[str, Any]]] = {}
    for d in conn.execute(sa.select(_deliveries).order_by(_deliveries.c.alert_id, _deliveries.c.id)):
        at = d.last_attempt_at or d.created_at
        lists.setdefault(d.alert_id, []).append({
            "channel": d.channel, "ok": d.state == "sent", "attempts": d.attempts, "error": d.last_error,
            "at": at.isoformat(timespec="milliseconds") + "Z" if at else None,
        })
    for alert_id, deliveries in lists.items():
        conn.execute(_alerts.update().where(_alerts.c.id == alert_id).values(deliveries=deliveries))
    conn.execute(_alerts.update().where(_alerts.c.deliveries.is_(None)).values(deliveries=[]))
    with op.batch_alter_table("alert_deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_deliveries_state"))
    op.drop_table("alert_deliveries")
