"""hosts can be Slurm login nodes: hosts.scheduler/sbatch_args/env, runs.scheduler_job_id/scheduler_state

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 12:30:00

Only columns are added, which SQLite does in place (ALTER TABLE ADD COLUMN): ``runs`` is not recreated, so
the FTS triggers of 0002 and the rowids they key on stay as they are. The downgrade drops the ``runs``
columns with SQLite's own ALTER TABLE DROP COLUMN (3.35+) for the same reason, instead of a batch copy.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

def upgrade() -> None:
    with op.batch_alter_table("hosts", recreate="never") as batch:
        batch.add_column(sa.Column("scheduler", sa.String(16), nullable=False, server_default="direct"))
        batch.add_column(sa.Column("sbatch_args", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("env", sa.JSON(), nullable=True))
    with op.batch_alter_table("runs", recreate="never") as batch:
        batch.add_column(sa.Column("scheduler_job_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("scheduler_state", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN scheduler_state")
    op.execute("ALTER TABLE runs DROP COLUMN scheduler_job_id")
    with op.batch_alter_table("hosts") as batch:
        batch.drop_column("env")
        batch.drop_column("sbatch_args")
        batch.drop_column("scheduler")
