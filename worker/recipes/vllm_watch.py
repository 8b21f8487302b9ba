"""Reading a starting vLLM server's log lines: fatal start markers and the root-cause exception.

Deliberately small: the controller's log parser does the full job; the recipe only needs to know *that* the
start failed (to end the health wait at once) and one line saying *why* (for the result event).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# vLLM 0.32/0.33 prefixes logging records with "(Name pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] ".
_PREFIX = re.compile(r"^(?:\x1b\[[0-9;]*m)*\([\w\-]+ pid=\d+(?:, ip=[^)]*)?\)\s+(?:(?:\x1b\[[0-9;]*m)*"
                     r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?:\x1b\[[0-9;]*m)*\s+\d\d-\d\d \d\d:\d\d:\d\d"
                     r"(?:\.\d+)?\s+\[[^\]]+\]\s?)?")
_EXC = re.compile(r"^((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)): (.*)$")

FATAL_MARKERS = (
    "EngineCore failed to start",
    "Engine core initialization failed",
    "WorkerProc failed to start",
    "EngineCore encountered a fatal error",
    "died unexpectedly",
    "EngineDeadError",
)
# Wrappers that point at a root cause printed earlier; never the root cause themselves.
_WRAPPERS = ("Engine core initialization failed", "Worker failed with error", "EngineCore encountered an issue",
             "EngineDeadError")


def strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line.rstrip("\r\n")).rstrip("\r")


def is_fatal(line: str) -> bool:
    return any(marker in line for marker in FATAL_MARKERS)


def root_cause(lines: Iterable[str]) -> str | None:
    """The first non-wrapper exception line (``Type: message``), else the last exception line seen."""
    first_real: str | None = None
    last: str | None = None
    for raw in lines:
        text = strip_prefix(raw).strip()
        match = _EXC.match(text)
        if not match:
            continue
        last = text
        if first_real is None and not any(w in text for w in _WRAPPERS) and "Warning" not in match.group(1):
            first_real = text
    return first_real or last
