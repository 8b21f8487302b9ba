"""`eorch runs` without SQLAlchemy: the history read with the standard library's sqlite3, when that is enough.

`eorch runs` is the command typed most, and importing SQLAlchemy alone takes longer than its start-up budget.
When the history is at the migrations' head and every run the listing shows has ended, nothing needs the ORM,
the settings or a host: the rows are read here, made into the same `RunView` that `runs.filtered` makes
(`runview.view_of`), and rendered by the same code. Otherwise (an active run to bring up to date, no history
yet, another schema, a database that cannot be read) the answer is None and the caller takes the full path.
tests/integration/test_quick_runs.py checks that both paths print the same bytes and that this one imports
no SQLAlchemy.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from orchestrator.core.runstate import RunStatus
from orchestrator.services.runview import RunView, view_of
from orchestrator.store.revision import head_revision

#: How long a read waits for a writer's lock (the monitor commits often and briefly).
BUSY_TIMEOUT_S = 5.0


def _value(declared: str, raw: Any) -> Any:
    """A column's value as the ORM gives it, by the type the migrations declared for the column."""
    if raw is None:
        return None
    kind = declared.upper()
    if kind == "DATETIME":
        return datetime.fromisoformat(raw)
    if kind == "JSON":
        return json.loads(raw)
    if kind == "BOOLEAN":
        return bool(raw)
    return raw


def ended_runs(db_path: Path, status: str | None, limit: int) -> tuple[list[RunView], bool] | None:
    """The newest ``limit`` runs (with ``status``, if given) and whether the history holds any run at all,
    when every one of them has ended; else None."""
    if not db_path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        return _read(conn, status, limit)
    except (sqlite3.Error, ValueError):  # a schema or a value this reader does not know: the full path knows
        return None
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, status: str | None, limit: int) -> tuple[list[RunView], bool] | None:
    (version,) = conn.execute("SELECT version_num FROM alembic_version").fetchone() or (None,)
    if version is None or version != head_revision():
        return None
    types = {name: declared for _, name, declared, *_ in conn.execute("PRAGMA table_info(runs)")}
    where, args = ("WHERE status = ?", [status]) if status is not None else ("", [])
    cur = conn.execute(f"SELECT * FROM runs {where} ORDER BY created_at DESC, id DESC LIMIT ?", [*args, limit])
    names = [d[0] for d in cur.description]
    rows = [SimpleNamespace(**{n: _value(types[n], v) for n, v in zip(names, row, strict=True)}) for row in cur]
    if not all(RunStatus(r.status).is_terminal() for r in rows):
        return None
    anything = bool(rows) or conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None
    return [view_of(r) for r in rows], anything  # type: ignore[arg-type]  # the columns the ORM row has
