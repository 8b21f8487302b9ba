"""runs.canary and runs.warm_server: an eagle3-extract run's canary verdict (status, seconds, step, error, root
cause, tiny model) and its kept server (state, retries, load time saved)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 10:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("canary", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("warm_server", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("warm_server")
        batch.drop_column("canary")
