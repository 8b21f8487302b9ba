"""Alembic environment: runs on a connection handed over by eorch, or on sqlalchemy.url."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from migrations.filters import include_object
from orchestrator.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_on(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                      include_object=include_object)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      render_as_batch=True, literal_binds=True, include_object=include_object)
    with context.begin_transaction():
        context.run_migrations()
else:
    conn = config.attributes.get("connection")
    if conn is not None:
        run_on(conn)
    else:
        engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite://")
        with engine.begin() as connection:
            run_on(connection)
