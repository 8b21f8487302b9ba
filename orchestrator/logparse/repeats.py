"""Failures a process lives with: the same exception, raised at the same place, logged again and again.

A process dies of an exception once.  It may print that traceback twice (vLLM logs it, then re-raises it and
``multiprocessing`` prints it again) or a few times (a retry loop that logs each attempt), but a worker that
prints the same exception from the same line of code ``SURVIVED`` times caught it each time and went on: a
per-item error of a training or data loop (``ValueError: step 0 - extract action failed``), not what ended the
job.  Once one writer shows that, every writer's traceback from that place is such an error, as the same code
runs everywhere.  Such tracebacks are evidence (pending error lines), not causes.

Only writers with a pid are counted: lines without a process prefix may come from many processes in turn (a
shell loop that retries a crashing command), and those do die of each.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.logparse.tbtext import CHAIN_MARKERS

#: Tracebacks from one place, by one writer, that show it lived through them.
SURVIVED = 5
_CAP = 256  # (writer, place) pairs counted; beyond it, new pairs are not
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)')


def site(text: str) -> str | None:
    """Where a traceback's first exception was raised: the last frame above its first chain marker
    (``/x/env.py:266``), whatever its exception line says (Ray's folding of repeated lines may have moved it);
    None when it shows no frame."""
    place = None
    for line in text.split("\n"):
        if line.startswith(CHAIN_MARKERS):
            break
        m = _FRAME.match(line)
        if m is not None:
            place = f"{m.group('file')}:{m.group('line')}"
    return place


class Repeats:
    """Counts tracebacks per (writer, place); says which places have been survived."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self.survived: list[str] = []

    def seen(self, writer: str, place: str) -> bool:
        """Count one traceback of ``writer`` from ``place``; whether this made ``place`` a survived one."""
        if ":" not in writer or place in self.survived:
            return False
        key = f"{writer}\t{place}"
        count = self._counts.get(key, 0) + 1
        if count == 1 and len(self._counts) >= _CAP:
            return False
        self._counts[key] = count
        if count < SURVIVED:
            return False
        self.survived.append(place)
        self._counts = {k: v for k, v in self._counts.items() if not k.endswith(f"\t{place}")}
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"counts": dict(self._counts), "survived": list(self.survived)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Repeats:
        out = cls()
        if data:
            out._counts = {str(k): int(v) for k, v in data.get("counts", {}).items()}
            out.survived = [str(p) for p in data.get("survived", [])]
        return out
