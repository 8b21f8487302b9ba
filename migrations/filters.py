"""What autogenerate compares: virtual tables (FTS5, migration 0002) and their shadow tables are not models."""

from __future__ import annotations

from typing import Any

VIRTUAL_TABLE_PREFIXES = ("runs_fts",)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Leave out reflected tables that are FTS5 tables or their shadow tables; keep everything else."""
    return not (type_ == "table" and reflected and compare_to is None and (name or "").startswith(VIRTUAL_TABLE_PREFIXES))
