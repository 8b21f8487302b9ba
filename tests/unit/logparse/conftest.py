"""Shared helpers for the logparse tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.logparse import LogParser, compiled
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "pure_parser: patches parser internals: runs on the Python modules")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A ``pure_parser`` test patches functions of the parser, which compiled modules do not see: where the
    compiled parser is in use, the test runs in a child on the Python modules 
    (``EORCH_COMPILED_PARSER=0``)."""
    if pyfuncitem.get_closest_marker("pure_parser") is None or not compiled.in_use():
        return None
    env = {**os.environ, compiled.ENV: "0"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            pyfuncitem.nodeid]
    child = subprocess.run(argv, check=False, cwd=pyfuncitem.config.rootpath, env=env, capture_output=True,
                           text=True)
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    return True
