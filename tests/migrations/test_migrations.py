"""Alembic migrations: one head, upgrade from empty, up/down consistency, models match the DDL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from migrations.filters import include_object
from orchestrator.store.db import alembic_config, make_engine, migrate, open_store
from orchestrator.store.models import Base


def revisions() -> list[str]:
    script = ScriptDirectory.from_config(alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def test_single_head() -> None:
    """The migration graph has exactly one head."""
    assert len(ScriptDirectory.from_config(alembic_config()).get_heads()) == 1


def test_upgrade_from_empty_creates_every_table(tmp_path: Path) -> None:
    """An empty file upgraded to head has every model table, with WAL and foreign keys on."""
    engine = make_engine(tmp_path / "h.db")
    migrate(engine)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_models_match_ddl(tmp_path: Path) -> None:
    """Autogenerate finds no difference between the models and the migrated schema."""
    engine = make_engine(tmp_path / "h.db")
    migrate(engine)
    with engine.connect() as conn:
        opts = {"render_as_batch": True, "include_object": include_object}
        diff = compare_metadata(MigrationContext.configure(conn, opts=opts), Base.metadata)
    assert diff == []


def test_up_down_consistency(tmp_path: Path) -> None:
    """Every revision downgrades to its parent and upgrades again."""
    engine = make_engine(tmp_path / "h.db")
    cfg = alembic_config(engine)
    for rev in revisions():
        command.upgrade(cfg, rev)
        command.downgrade(cfg, "-1")
        command.upgrade(cfg, rev)
    command.downgrade(cfg, "base")
    assert [t for t in inspect(engine).get_table_names() if t != "alembic_version"] == []


def test_migrate_is_idempotent(tmp_path: Path) -> None:
    """Opening the store twice leaves it at head without error."""
    open_store(tmp_path / "h.db")
    open_store(tmp_path / "h.db")


def test_fast_head_matches_alembic() -> None:
    """The start-up shortcut that reads revision ids from the files agrees with Alembic's own head."""
    from orchestrator.store.db import head_revision

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()
