"""runs.rerun_of (the run a rerun repeats) and runs.alerts_muted_at (alerts of the run muted since then)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 13:00:00

Columns are added in place (ALTER TABLE ADD COLUMN), so the FTS triggers of 0002 keep their rowids; the
downgrade drops them with SQLite's own ALTER TABLE DROP COLUMN for the same reason. ``rerun_of`` is a plain
id, not a foreign key: a rerun outlives the deletion of the run it repeated.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", recreate="never") as batch:
        batch.add_column(sa.Column("rerun_of", sa.String(32), nullable=True))
        batch.add_column(sa.Column("alerts_muted_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN alerts_muted_at")
    op.execute("ALTER TABLE runs DROP COLUMN rerun_of")
