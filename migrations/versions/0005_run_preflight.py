"""runs.preflight: the preflight report a launch ran (checks ok/warn/fail with evidence and what to do)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 09:20:00

One nullable JSON column, added in place (ALTER TABLE ADD COLUMN) as in 0003 so ``runs`` and its FTS
triggers stay as they are; the downgrade drops it with SQLite's own ALTER TABLE DROP COLUMN.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", recreate="never") as batch:
        batch.add_column(sa.Column("preflight", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN preflight")
