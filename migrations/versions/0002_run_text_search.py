"""full-text search over root causes (FTS5) and history indexes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 12:00:00

``runs_fts`` mirrors each run's root cause (exception, message, traceback) and name, keyed by the run's
rowid, kept in step by triggers. It is a virtual table, so it is not in the models; migrations/env.py
leaves it (and its shadow tables) out of the models-vs-DDL comparison.

A future batch migration that recreates ``runs`` drops these triggers and changes rowids: it must
recreate the triggers and rebuild the table (``INSERT INTO runs_fts(runs_fts) VALUES('rebuild')`` does
not apply to a non-external-content table; re-run the backfill below instead).
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_ROW = (
    "{ref}.rowid, {ref}.id, {ref}.name, json_extract({ref}.root_cause, '$.exception'), "
    "json_extract({ref}.root_cause, '$.message'), json_extract({ref}.root_cause, '$.traceback')"
)


def upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE runs_fts USING fts5("
        "run_id UNINDEXED, name, exception, message, traceback, tokenize = 'unicode61 tokenchars ''_''')"
    )
    op.execute(f"INSERT INTO runs_fts(rowid, run_id, name, exception, message, traceback) "
               f"SELECT {_ROW.format(ref='runs')} FROM runs WHERE root_cause IS NOT NULL")
    op.execute(
        "CREATE TRIGGER runs_fts_insert AFTER INSERT ON runs WHEN new.root_cause IS NOT NULL BEGIN "
        f"INSERT INTO runs_fts(rowid, run_id, name, exception, message, traceback) "
        f"VALUES ({_ROW.format(ref='new')}); END"
    )
    op.execute(
        "CREATE TRIGGER runs_fts_update AFTER UPDATE OF root_cause, name ON runs BEGIN "
        "DELETE FROM runs_fts WHERE rowid = old.rowid; "
        f"INSERT INTO runs_fts(rowid, run_id, name, exception, message, traceback) "
        f"SELECT {_ROW.format(ref='new')} WHERE new.root_cause IS NOT NULL; END"
    )
    op.execute("CREATE TRIGGER runs_fts_delete AFTER DELETE ON runs BEGIN "
               "DELETE FROM runs_fts WHERE rowid = old.rowid; END")


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS runs_fts_delete")
    op.execute("DROP TRIGGER IF EXISTS runs_fts_update")
    op.execute("DROP TRIGGER IF EXISTS runs_fts_insert")
    op.execute("DROP TABLE IF EXISTS runs_fts")
