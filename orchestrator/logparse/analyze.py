"""Whole-file analysis: read a log in large chunks through one ``LogParser``."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.parser import LogParser

#: Read size for offline analysis: large enough for the funnel to pay off, small enough for bounded memory.
CHUNK = 8 * 1024 * 1024


def analyze_path(path: str | Path, chunk_size: int = CHUNK) -> Analysis:
    """Parse a whole file; raises OSError when it cannot be read."""
    with open(path, "rb") as fh:
        return analyze_stream(fh, chunk_size)


def analyze_stream(stream: BinaryIO, chunk_size: int = CHUNK) -> Analysis:
    """Parse everything an open binary stream gives until its end (a pipe: ``kubectl logs POD | …``)."""
    parser = LogParser()
    while chunk := stream.read(chunk_size):
        parser.feed(chunk)
    parser.finish()
    return parser.analysis()


def analyze_bytes(data: bytes) -> Analysis:
    """Parse a complete log held in memory."""
    parser = LogParser()
    parser.feed(data)
    parser.finish()
    return parser.analysis()
