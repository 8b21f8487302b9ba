"""A log that holds several runs, one after the other: each try appended to the same file (``>>``, a Slurm
requeue, a script that restarts the server), read as runs of their own.

The verdict of such a log is its last run's: a try that failed, then one that served and stopped cleanly,
is not a failed log.  The runs before it are kept (``Analysis.earlier``) with their own verdicts.  A run
starts at a line where a vLLM process says it starts (the API server's version line, or an engine's
``Initializing ... LLM engine (v...)``), when the run before it has ended as far as its log says: failed,
stopped, or with an error pending (a data-parallel run's engines each print their start while the first is
still starting: no new run).  Offline analysis only: a followed job has a log of its own.
"""

from __future__ import annotations

import dataclasses
import re

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.parser import LogParser
from orchestrator.logparse.phases import Phase

#: A line on which a vLLM process says it starts.
RUN_START = re.compile(rb"vLLM API server version |Initializing an? (?:V1 )?LLM engine \(v")
_ENGINE_START = re.compile(rb"Initializing an? (?:V1 )?LLM engine \(v")
#: The literals those lines are found by (``bytes.find`` runs at GB/s; a regex alternation with no literal
#: prefix steps through every byte in Python's engine, ~150 MB/s, which halved the speed of a serving log),
#: and how far before the second one its line's match may start ("Initializing an V1 ").
_API, _ENGINE, _ENGINE_REACH = b"vLLM API server version ", b"LLM engine (v", len(b"Initializing an V1 ")
#: Runs kept before the last one (the earliest ones are dropped first).
KEEP_EARLIER = 16


class RunSplitter:
    """``LogParser.feed``/``finish``/``analysis`` over a stream of several runs."""

    def __init__(self) -> None:
        self._parser = LogParser()
        self._lines_before = 0  # lines of the runs before the current one
        self._bytes_before = 0
        self._earlier: list[Analysis] = []

    def feed(self, chunk: bytes) -> None:
        pos = 0
        for at in starts(chunk):
            start = chunk.rfind(b"\n", 0, at) + 1
            if start < pos or (start == 0 and self._parser.line_end_offset + self._bytes_before == 0):
                continue  # a second mark on the line, or the log's very first line
            if start == 0 and self._pending():
                continue  # the line began in the chunk before: it cannot be cut here
            self._parser.feed(chunk[pos:start])
            pos = start
            if self._ended():
                self._next_run()
        self._parser.feed(chunk[pos:])

    def finish(self) -> None:
        self._parser.finish()

    def analysis(self) -> Analysis:
        last = self._shifted(self._parser.analysis())
        return dataclasses.replace(last, earlier=tuple(self._earlier)) if self._earlier else last

    def _shifted(self, analysis: Analysis) -> Analysis:
        """``analysis`` of the current run numbered as lines and bytes of the whole log."""
        shift = self._lines_before
        return analysis.renumbered(lambda n: n + shift, analysis.lines + shift, analysis.bytes + self._bytes_before)

    def _pending(self) -> bool:
        return self._parser.partial_line

    def _ended(self) -> bool:
        a = self._parser.analysis()
        return a.failed or a.phase is Phase.STOPPED or (a.root_cause is not None and a.errors > 0)

    def _next_run(self) -> None:
        self._parser.finish()
        done = self._parser.analysis()
        self._earlier.append(self._shifted(done))
        del self._earlier[:-KEEP_EARLIER]
        self._lines_before += done.lines
        self._bytes_before += done.bytes
        self._parser = LogParser()


def starts(chunk: bytes) -> list[int]:
    """Where ``RUN_START`` matches in ``chunk``, in order (positions of its literal part: only the lines
    they are on matter)."""
    out: list[int] = []
    find = chunk.find
    i = find(_API)
    while i >= 0:
        out.append(i)
        i = find(_API, i + len(_API))
    i = find(_ENGINE)
    while i >= 0:
        if _ENGINE_START.search(chunk, max(0, i - _ENGINE_REACH), i + len(_ENGINE)) is not None:
            out.append(i)
        i = find(_ENGINE, i + len(_ENGINE))
    out.sort()
    return out
