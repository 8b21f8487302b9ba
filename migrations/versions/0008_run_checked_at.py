"""runs.checked_at: when the run's liveness was last confirmed on its host (the "as of" of its status)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 09:30:00

A column is added in place (ALTER TABLE ADD COLUMN), so the FTS triggers of 0002 keep their rowids; the
downgrade drops it with SQLite's own ALTER TABLE DROP COLUMN for the same reason.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", recreate="never") as batch:
        batch.add_column(sa.Column("checked_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN checked_at")
