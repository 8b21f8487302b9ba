"""Opening the history: engine with SQLite pragmas, and Alembic upgrades on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.errors import StoreError

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"


def _set_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(db_path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{db_path}")
    event.listen(engine, "connect", _set_pragmas)
    return engine


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["configure_logger"] = False
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def migrate(engine: Engine) -> None:
    """Upgrade the database to head (a no-op when already there)."""
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
        if current == head_revision():
            return
        with engine.begin() as conn:
            cfg = alembic_config(engine)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    except SQLAlchemyError as err:
        raise StoreError(f"cannot open or migrate the history database: {err.__class__.__name__}: {err}") from err


def open_store(db_path: Path) -> sessionmaker[Session]:
    engine = make_engine(db_path)
    migrate(engine)
    return sessionmaker(engine, expire_on_commit=False)
