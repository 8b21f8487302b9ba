"""The wall clock as the history records it: naive UTC (every time column, every `--json` stamp)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
