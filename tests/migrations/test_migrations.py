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


def test_0004_moves_delivery_records_into_the_outbox_and_back(tmp_path: Path) -> None:
    """Alerts recorded before the outbox keep their deliveries: each JSON record becomes a sent/failed row on
    upgrade, and the rows become the JSON list again on downgrade."""
    import json

    engine = make_engine(tmp_path / "h.db")
    cfg = alembic_config(engine)
    command.upgrade(cfg, "0003")
    old = [{"channel": "json://127.0.0.1", "ok": True, "attempts": 1, "error": None, "at": "2026-11-01T10:00:01.000Z"},
           {"channel": "slack://…", "ok": False, "attempts": 4, "error": "the service did not accept the notification",
            "at": "2026-11-01T10:00:09.500Z"}]
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "insert into alerts (dedup_key, kind, created_at, title, body, deliveries) values "
            "('host:gpu:host_unreachable:x', 'host_unreachable', '2026-11-01 10:00:00.000000', 't', 'b', ?), "
            "('host:gpu:host_unreachable:y', 'host_unreachable', '2026-11-01 11:00:00.000000', 't', 'b', '[]')",
            (json.dumps(old),))
    command.upgrade(cfg, "0004")
    assert "deliveries" not in {c["name"] for c in inspect(engine).get_columns("alerts")}
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("select alert_id, channel, channel_key, state, attempts, last_error, sent_at "
                                    "from alert_deliveries order by id").fetchall()
    assert [tuple(r) for r in rows] == [
        (1, "json://127.0.0.1", "legacy:0", "sent", 1, None, "2026-11-01 10:00:01.000000"),
        (1, "slack://…", "legacy:1", "failed", 4, "the service did not accept the notification", None),
    ]
    command.downgrade(cfg, "0003")
    with engine.connect() as conn:
        back = [json.loads(v) for (v,) in conn.exec_driver_sql("select deliveries from alerts order by id")]
    assert back == [old, []]


class TestFirstCommandsSideBySide:
    def test_parallel_first_launches_on_an_empty_home_all_succeed(self, tmp_path) -> None:
        """Six `eorch launch` at once on a new $EORCH_HOME: one migrates, the others wait for it (the race
        used to fail most of them with `table hosts already exists`)."""
        import os
        import subprocess
        import sys

        home = tmp_path / "home"
        home.mkdir()
        (home / "config.toml").write_text(f"[local]\nroot = \"{tmp_path / 'root'}\"\n")
        env = {**os.environ, "EORCH_HOME": str(home)}
        procs = [subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "launch", "--host", "local",
                                   "--", "true"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        results = [(p.wait(120), p.stderr.read()) for p in procs]
        assert [rc for rc, _ in results] == [0] * 6, [err for _, err in results]
