"""A log that holds several runs, one after the other: each try appended to the same file (``>>``, a Slurm
requeue, a script that restarts the server), read as runs of their own.

The verdict of such a log is its last run's: a try that failed, then one that served and stopped cleanly,
is not a failed log.  The runs before it are kept (``Analysis.earlier``) with their own verdicts.  A run
starts at a line where a vLLM process says it starts (the API server's version line, 0.2x's ``non-default
args:`` record, or an engine's ``Initializing ... LLM engine (v...)``), when the run before it has ended as far
as its log says: failed, stopped, or with an error pending (a data-parallel run's engines each print their start while the first is
still starting: no new run).  A followed job is read the same way (a script that restarts ``vllm serve`` until
it comes up writes one log of several tries), so ``eorch log analyze`` and the monitor agree on its verdict:
``RunSplitter`` has the parser's incremental surface (events numbered as lines of the whole log, snapshots).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from orchestrator.logparse import native
from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.events import LogEvent, RootCause, RootCauseFound
from orchestrator.logparse.lines import LINE_CAP
from orchestrator.logparse.parser import LogParser
from orchestrator.logparse.phases import Phase

#: A line on which a vLLM process says it starts.
RUN_START = re.compile(rb"vLLM API server version |\] non-default args: |Initializing an? (?:V1 )?LLM engine \(v")
_ENGINE_START = re.compile(rb"Initializing an? (?:V1 )?LLM engine \(v")
#: The literals those lines are found by (``bytes.find`` runs at GB/s; a regex alternation with no literal
#: prefix steps through every byte in Python's engine, ~150 MB/s, which halved the speed of a serving log),
#: and how far before the second one its line's match may start ("Initializing an V1 ").
_API, _ENGINE, _ENGINE_REACH = b"vLLM API server version ", b"LLM engine (v", len(b"Initializing an V1 ")
#: 0.2x's first record of a start (the API server's, or ``LLM(...)``'s): its banner no longer names the version.
_ARGS = b"] non-default args: "
_LITERALS = (_API, _ARGS, _ENGINE)
#: Runs kept before the last one (the earliest ones are dropped first).
KEEP_EARLIER = 16


class RunSplitter:
    """``LogParser``'s ``feed``/``finish``/``analysis``/``snapshot`` over a stream of several runs."""

    def __init__(self) -> None:
        self._parser = LogParser()
        self._lines_before = 0  # lines of the runs before the current one
        self._bytes_before = 0
        self._earlier: list[Analysis] = []
        self._try_no = 1  # the current run's number among the log's tries (``KEEP_EARLIER`` of those before kept)

    @property
    def line_end_offset(self) -> int:
        """Bytes of the log up to and including the last line terminator handed to the parser."""
        return self._bytes_before + self._parser.line_end_offset

    @property
    def tail_lines(self) -> list[str]:
        return self._parser.tail_lines

    @property
    def first_line(self) -> int:
        """The log's line where the current run starts (1 until a second run started)."""
        return self._lines_before + 1

    def feed(self, chunk: bytes) -> list[LogEvent]:
        """Consume ``chunk``; events for the lines it completed, numbered as lines of the whole log."""
        events: list[LogEvent] = []
        held = self._parser.partial_text
        if held is not None and chunk:
            # The line the last chunk ended in goes on here: is it where a run starts?  Then the parser gives
            # it back, unread, and it goes to the next run's parser (unless the parser cannot: a line of
            # tqdm frames longer than the tail keeps, with a start after them, stays in its run).
            reach = min(len(chunk), LINE_CAP)
            ends = [t for t in (chunk.find(b"\r", 0, reach), chunk.find(b"\n", 0, reach)) if t >= 0]
            line = held + chunk[:min(ends, default=reach)]
            found = starts(line)
            if found and self._ended(settled=all(line.startswith(_ARGS, at) for at in found)):
                taken = self._parser.take_partial_line()
                if taken is not None:
                    events += self._next_run()
                    events += self._shifted_events(self._parser.feed(taken))
        return events + self._lines(chunk)

    def finish(self) -> list[LogEvent]:
        return self._shifted_events(self._parser.finish())

    def analysis(self) -> Analysis:
        last = dataclasses.replace(self._shifted(self._parser.analysis()), try_no=self._try_no)
        if not self._earlier:
            return last
        last = dataclasses.replace(last, earlier=tuple(self._earlier))
        looped = crash_loop(self._earlier, last)
        # A crash loop (a restart policy starting the server again after each death) whose latest try has not
        # got anywhere yet: the log's verdict is the failure it keeps repeating.
        return last if looped is None else dataclasses.replace(last, failed=True, phase=Phase.FAILED,
                                                               root_cause=looped)

    def snapshot(self) -> dict[str, Any]:
        """The parser's snapshot (as of ``line_end_offset``), with where its run starts in the log and the runs
        before it: what ``failure_evidence`` reads of it stays where it was."""
        return {**self._parser.snapshot(), "tries": {
            "lines": self._lines_before, "bytes": self._bytes_before, "try": self._try_no,
            "earlier": [_earlier_to_json(e) for e in self._earlier]}}

    @classmethod
    def restore(cls, snap: dict[str, Any]) -> RunSplitter:
        """A splitter that continues as if the bytes before ``line_end_offset`` had been fed (a snapshot of a
        bare ``LogParser``, written before runs were split, restores as the log's first run)."""
        out = cls()
        out._parser = LogParser.restore(snap)
        tries = _tries(snap)
        out._lines_before, out._bytes_before = int(tries.get("lines", 0)), int(tries.get("bytes", 0))
        out._earlier = [_earlier_from_json(e, n) for n, e in enumerate(tries.get("earlier", []), 1)]
        out._try_no = int(tries.get("try", len(out._earlier) + 1))
        return out

    def _lines(self, block: bytes) -> list[LogEvent]:
        """Feed ``block``, a new run at each line where one starts (``feed`` has seen to the line the block
        begins in, when it began in the chunk before)."""
        events: list[LogEvent] = []
        pos = 0
        for at in starts(block):
            start = block.rfind(b"\n", 0, at) + 1
            if start < pos or (start == 0 and self.line_end_offset == 0):
                continue  # a second mark on the line, or the log's very first line
            if start == 0 and self._parser.partial_line:
                continue  # the line began in the chunk before: ``feed`` judged it whole
            events += self._shifted_events(self._parser.feed(block[pos:start]))
            pos = start
            if self._ended(settled=block.startswith(_ARGS, at)):
                events += self._next_run()
        return events + self._shifted_events(self._parser.feed(block[pos:]))

    def _shifted(self, analysis: Analysis) -> Analysis:
        """``analysis`` of the current run numbered as lines and bytes of the whole log."""
        shift = self._lines_before
        return analysis.renumbered(lambda n: n + shift, analysis.lines + shift, analysis.bytes + self._bytes_before)

    def _shifted_events(self, events: list[LogEvent]) -> list[LogEvent]:
        shift = self._lines_before
        if not shift or not events:
            return events
        out: list[LogEvent] = []
        for e in events:
            if isinstance(e, RootCauseFound):
                rc = dataclasses.replace(e.root_cause, line_no=e.root_cause.line_no + shift)
                out.append(RootCauseFound(rc, e.line_no + shift))
            else:
                out.append(dataclasses.replace(e, line_no=e.line_no + shift))
        return out

    def _ended(self, settled: bool = False) -> bool:
        """Whether the current run has ended as far as its log says; ``settled``: failed or stopped, an error
        pending is not enough (``non-default args`` comes after what a process logs as it starts: a plugin
        that failed to load is its own run's)."""
        a = self._parser.analysis()
        return a.failed or a.phase is Phase.STOPPED or (not settled and a.root_cause is not None and a.errors > 0)

    def _next_run(self) -> list[LogEvent]:
        """Finish the current run and keep it as an earlier one; a new parser for the next.  The events of
        finishing it (tracebacks it left open)."""
        events = self._shifted_events(self._parser.finish())
        done = self._parser.analysis()
        # Kept as a snapshot keeps it (lines, verdict, cause): a restored splitter says the same of it.
        self._earlier.append(_kept(dataclasses.replace(self._shifted(done), try_no=self._try_no)))
        del self._earlier[:-KEEP_EARLIER]
        self._try_no += 1
        self._lines_before += done.lines
        self._bytes_before += done.bytes
        self._parser = self._parser.next_run()
        return events


def lines_before(snapshot: dict[str, Any] | None) -> int:
    """The log's lines before the run a ``RunSplitter`` snapshot is of (0 for a bare ``LogParser``'s)."""
    return int(_tries(snapshot).get("lines", 0))


def earlier_runs(snapshot: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The runs before the last one, from a ``RunSplitter`` snapshot, as ``eorch log analyze --json`` lists
    them (``earlier_runs``)."""
    return [_earlier_from_json(e, n).try_json() for n, e in enumerate(_tries(snapshot).get("earlier") or [], 1)]


def _tries(snapshot: dict[str, Any] | None) -> dict[str, Any]:
    tries = (snapshot or {}).get("tries")
    return tries if isinstance(tries, dict) else {}


#: Earlier tries that must have failed the same way, one after the other, for a restart to be a crash loop.
CRASH_LOOP_TRIES = 2


def crash_loop(earlier: list[Analysis], last: Analysis) -> RootCause | None:
    """The cause the tries keep failing of, when the last ones before ``last`` all failed of the same one and
    ``last`` is only starting again (no error of its own, not loaded yet); else None."""
    if last.failed or last.root_cause is not None or last.phase.rank > Phase.LOADING.rank:
        return None
    tries = earlier[-CRASH_LOOP_TRIES:]
    causes = [a.root_cause for a in tries if a.failed and a.root_cause is not None]
    if len(causes) < CRASH_LOOP_TRIES or len({(rc.exception, rc.message) for rc in causes if rc}) != 1:
        return None
    return causes[-1]


def _kept(a: Analysis) -> Analysis:
    """What is kept of an earlier run: its lines, verdict and cause, without the cause's traceback (the
    follower writes the snapshot at every commit; the traceback is in the log, at its line)."""
    rc = None if a.root_cause is None else dataclasses.replace(a.root_cause, traceback=None)
    return Analysis(phase=a.phase, shards=None, failed=a.failed, root_cause=rc, signatures=(), lines=a.lines,
                    bytes=a.bytes, errors=a.errors, first_line=a.first_line, try_no=a.try_no)


def _earlier_to_json(a: Analysis) -> dict[str, Any]:
    """A kept run (``_kept``) in a snapshot."""
    rc = a.root_cause
    return {"try": a.try_no, "first_line": a.first_line, "last_line": a.lines, "bytes": a.bytes, "phase": a.phase.value,
            "failed": a.failed, "errors": a.errors, "root_cause": None if rc is None else rc.to_dict()}


def _earlier_from_json(d: dict[str, Any], n: int = 1) -> Analysis:
    """A kept run from a snapshot; ``n``: its place among those kept, its number where the snapshot predates
    try numbers (nothing was dropped before ``KEEP_EARLIER`` runs)."""
    rc = d.get("root_cause")
    return Analysis(phase=Phase(d["phase"]), shards=None, failed=bool(d["failed"]),
                    root_cause=None if rc is None else RootCause.from_dict(rc), signatures=(),
                    lines=int(d["last_line"]), bytes=int(d["bytes"]), errors=int(d.get("errors", 0)),
                    first_line=int(d["first_line"]), try_no=int(d.get("try", n)))


def starts(chunk: bytes) -> list[int]:
    """Where ``RUN_START`` matches in ``chunk``, in order (positions of its literal part: only the lines
    they are on matter).  The literals are found in one native pass when Hyperscan is there (``native``):
    ``bytes.find`` of each, a pass apiece, cost a tenth of a serving log's parse."""
    found = native.finder(_LITERALS)
    if found is not None:
        hits = found(chunk, 0, len(chunk))
    else:
        hits = []
        find = chunk.find
        for literal in _LITERALS:
            i = find(literal)
            while i >= 0:
                hits.append(i)
                i = find(literal, i + len(literal))
        hits.sort()
    return [i for i in hits if not chunk.startswith(_ENGINE, i)
            or _ENGINE_START.search(chunk, max(0, i - _ENGINE_REACH), i + len(_ENGINE)) is not None]
