"""Shared helpers for the logparse tests."""

from __future__ import annotations

from pathlib import Path

from orchestrator.logparse import LogParser
from orchestrator.logparse.events import LogEvent

LOG_DIR = Path(__file__).resolve().parents[2] / "data" / "logs"


def parse_all(data: bytes, chunks: list[int] | None = None) -> tuple[list[LogEvent], LogParser]:
    """Feed ``data`` split at the given sizes (one chunk when None), then finish."""
    parser = LogParser()
    events: list[LogEvent] = []
    pos = 0
    for size in chunks or []:
        events += parser.feed(data[pos:pos + size])
        pos += size
    events += parser.feed(data[pos:])
    events += parser.finish()
    return events, parser
