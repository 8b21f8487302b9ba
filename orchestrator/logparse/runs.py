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
        for m in RUN_START.finditer(chunk):
            start = chunk.rfind(b"\n", 0, m.start()) + 1
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
        last = self._parser.analysis()
        shift = self._lines_before
        last = last.renumbered(lambda n: n + shift, last.lines + shift, last.bytes + self._bytes_before)
        return dataclasses.replace(last, earlier=tuple(self._earlier)) if self._earlier else last

    def _pending(self) -> bool:
        return self._parser.analysis().bytes > self._parser.line_end_offset

    def _ended(self) -> bool:
        a = self._parser.analysis()
        return a.failed or a.phase is Phase.STOPPED or (a.root_cause is not None and a.errors > 0)

    def _next_run(self) -> None:
        self._parser.finish()
        done = self._parser.analysis()
        shift = self._lines_before
        self._earlier.append(done.renumbered(lambda n: n + shift, done.lines + shift, done.bytes + self._bytes_before))
        del self._earlier[:-KEEP_EARLIER]
        self._lines_before += done.lines
        self._bytes_before += done.bytes
        self._parser = LogParser()
