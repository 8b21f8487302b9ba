"""The migrations' head revision, read from migrations/versions without Alembic or SQLAlchemy (start-up)."""

from __future__ import annotations

import re
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"

_REVISION_RE = re.compile(r"^(down_revision|revision)\s*=\s*['\"]?([\w]+|None)['\"]?", re.MULTILINE)


def head_revision() -> str | None:
    """The head of migrations/versions, read from the files without importing Alembic (CLI start-up)."""
    revisions, parents = set(), set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        found = dict(_REVISION_RE.findall(path.read_text()))
        if "revision" in found:
            revisions.add(found["revision"])
            parents.add(found.get("down_revision"))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
