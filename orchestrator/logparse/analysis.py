"""The verdict on a log as read so far (``Analysis``), and how it is written as JSON.

The evidence it is chosen from, and how, is ``evidence.py``'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.logparse.events import RootCause
from orchestrator.logparse.phases import Phase, ProgressReading, ShardReading


@dataclass(frozen=True)
class SignatureCount:
    id: str
    count: int
    first_line: int


@dataclass(frozen=True)
class Analysis:
    """The verdict on a log as read so far."""

    phase: Phase  # FAILED when failed
    shards: ShardReading | None
    failed: bool
    root_cause: RootCause | None
    signatures: tuple[SignatureCount, ...]
    lines: int
    bytes: int
    progress: ProgressReading | None = None
    weights_load_s: float | None = None  # the model's "Loading weights took", never the drafter's
    errors: int = 0  # error lines (ERROR records, `ERROR: ...`), whether or not they are the root cause
    first_error: RootCause | None = None  # the first error line kept as evidence (not part of the JSON)
    first_error_at: int | None = None  # the first error line, one a signature explains too
    #: Where this run's lines start (``lines`` is its last line), and the runs before it in the same log (a
    #: log appended to by each try: ``runs.py``; offline analysis only).
    first_line: int = 1
    earlier: tuple[Analysis, ...] = ()
    #: This run's number among the log's tries (1 for the first; the last run's is how many there are): the
    #: earliest runs are not kept in ``earlier`` when there are many.
    try_no: int = 1

    def renumbered(self, line_of: Callable[[int], int], lines: int, size: int) -> Analysis:
        """This analysis with every line number ``n`` read as ``line_of(n)`` and ``lines``/``bytes`` given.  A
        run's range stays lowest line first when ``line_of`` runs backwards (a log read newest line first)."""

        def cause(rc: RootCause | None) -> RootCause | None:
            return None if rc is None else dataclasses.replace(rc, line_no=line_of(rc.line_no))

        backwards = line_of(1) > line_of(2)  # (a log read newest line first: ``reverse.Reverser``)

        def earlier(e: Analysis) -> Analysis:
            # A run's last line is the line before the next run's first (a joined line may span several).
            last = line_of(e.lines) if backwards else line_of(e.lines + 1) - 1
            first, last = sorted((line_of(e.first_line), last))
            return dataclasses.replace(e.renumbered(line_of, last, e.bytes), first_line=first)

        return dataclasses.replace(
            self, root_cause=cause(self.root_cause), first_error=cause(self.first_error),
            signatures=tuple(SignatureCount(s.id, s.count, line_of(s.first_line)) for s in self.signatures),
            lines=lines, bytes=size, first_line=min(line_of(self.first_line), line_of(self.lines)),
            first_error_at=None if self.first_error_at is None else line_of(self.first_error_at),
            earlier=tuple(earlier(e) for e in self.earlier))

    def to_json(self, file: str) -> dict[str, Any]:
        """The ``eorch log analyze --json`` object for one file (a stable contract)."""
        return {
            "file": file,
            "phase": self.phase.value,
            "shards": None if self.shards is None else {"done": self.shards.done, "total": self.shards.total},
            "failed": self.failed,
            "root_cause": self._root_json(),
            "signatures": [
                {"id": s.id, "count": s.count, "first_line": s.first_line} for s in self.signatures
            ],
            # Error lines (ERROR records, ``ERROR: ...``), the root cause's or not: what the summary's "errors" says.
            "errors": {"count": self.errors, "first_line": self.first_error_at},
            "lines": self.lines,
            "bytes": self.bytes,
            "earlier_runs": [e.try_json() for e in self.earlier],
            "tries": self.try_no,
        }

    def try_json(self) -> dict[str, Any]:
        """This run as one of the ``earlier_runs`` of a log of several tries: where it is, and its verdict."""
        return {"try": self.try_no, "first_line": self.first_line, "last_line": self.lines,
                "phase": self.phase.value, "failed": self.failed, "root_cause": self._root_json()}

    def _root_json(self) -> dict[str, Any] | None:
        """The root cause as ``--json`` gives it: the contract's object, with its line and hint."""
        rc = self.root_cause
        return None if rc is None else {**rc.to_json(), "line": rc.line_no, "hint": rc.hint}
