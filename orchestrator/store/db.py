"""Opening the history: engine with SQLite pragmas, and Alembic upgrades on first use."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session as Session  # noqa: PLC0414 (the type the store's functions take)
from sqlalchemy.orm import sessionmaker as sessionmaker  # noqa: PLC0414 (the history's session factory)

from orchestrator.errors import HistoryReadOnly, StoreError
from orchestrator.store.revision import MIGRATIONS_DIR, head_revision

if TYPE_CHECKING:
    from alembic.config import Config

BUSY_TIMEOUT_S = 5  # how long a write waits for another process's transaction before it fails


def _set_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(db_path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{db_path}")
    event.listen(engine, "connect", _set_pragmas)
    return engine


def alembic_config(engine: Engine | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["configure_logger"] = False
    return cfg


def current_revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            return conn.execute(text("select version_num from alembic_version")).scalar()
    except OperationalError:  # no alembic_version table yet: an empty database
        return None


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """One migrating process at a time per database file: the others wait, then find it at head."""
    database = engine.url.database
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def migrate(engine: Engine) -> None:
    """Upgrade the database to head (a no-op, without importing Alembic, when already there)."""
    try:
        if current_revision(engine) == head_revision() is not None:
            return
        from alembic import command

        with _migration_lock(engine):  # the first commands of a new $EORCH_HOME may start side by side
            if current_revision(engine) == head_revision() is not None:
                return
            with engine.begin() as conn:
                cfg = alembic_config(engine)
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
    except SQLAlchemyError as err:
        raise StoreError(f"cannot open or migrate the history database: {err.__class__.__name__}: {err}") from err


#: What a write to the history that failed raises, besides ``HistoryReadOnly`` (callers outside the store catch it).
WriteFailed = SQLAlchemyError


@contextmanager
def transaction(make_session: sessionmaker[Session], db_path: Path) -> Iterator[Session]:
    """A session whose changes commit together on success and roll back on any error.

    A history that cannot be written (file or directory read-only) is a ``HistoryReadOnly`` naming it."""
    try:
        with make_session.begin() as session:
            yield session
    except OperationalError as err:
        if "readonly" not in str(err.orig).replace("-", "").replace(" ", ""):
            raise
        raise HistoryReadOnly(f"the history {db_path} is read-only ({err.orig}): make it and its "
                              "directory writable, or point EORCH_HOME elsewhere") from None


def describe_write_failure(err: BaseException) -> str:
    """Why a write to the history failed, in words a user can act on."""
    text = str(getattr(err, "orig", None) or err)
    if "locked" in text or "busy" in text:
        return f"the history database is locked by another process beyond the {BUSY_TIMEOUT_S} s busy timeout"
    if "readonly" in text or "read-only" in text:
        return ("the history $EORCH_HOME/eorch.db is read-only: make it and its directory writable, or point "
                "EORCH_HOME elsewhere")
    return f"the history database cannot be written: {text}"


def is_read_only(err: BaseException) -> bool:
    return isinstance(err, OperationalError) and "readonly" in str(err.orig)


def check_writable(make_session: sessionmaker[Session]) -> None:
    """Raise ``StoreError`` when the history cannot be written at all; a locked one is only busy."""
    try:
        with make_session.begin() as s:
            s.execute(text("DELETE FROM events WHERE 0"))  # takes the write lock, changes nothing
    except OperationalError as err:
        if is_read_only(err):
            raise StoreError(f"cannot record: {describe_write_failure(err)}") from err


def open_store(db_path: Path) -> sessionmaker[Session]:
    engine = make_engine(db_path)
    migrate(engine)
    return sessionmaker(engine, expire_on_commit=False)
