"""Following one run's files on its host: the log (through the parser) and the recipe's step events.

The byte offset is committed to the history only at line ends, in the same transaction as the events
and the parser state at that point, so a controller killed at any moment resumes exactly: no line lost,
none recorded twice. The end of a stream never means the job ended; liveness is the monitor's business.

After each commit the log follower announces the lines it read (``LogLinesRead``, split once by
``logparse.shown``): that is how a screen shows a log the monitor follows.  ``LogFollower.reading`` is the
same follower that records nothing, for a screen when another process holds the monitor lock.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from orchestrator.context import Context
from orchestrator.core import commands
from orchestrator.core.eventbudget import EventBudget
from orchestrator.core.notices import LogLinesRead, Notice, RunProgressed
from orchestrator.core.runstate import merge_phase
from orchestrator.errors import StreamBroken
from orchestrator.logparse.runs import RunSplitter, lines_before
from orchestrator.logparse.shown import ShownLines
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries
from orchestrator.store.models import Run
from orchestrator.store.queries import add_events

log = logging.getLogger(__name__)

READ_SIZE = 1 << 16
RESTART_DELAY_S = 0.5


class _Stream:
    """A restartable stream of a remote file from a byte offset, with a drain target."""

    def __init__(self, session: HostSession, path: str) -> None:
        self.session = session
        self.path = path
        self.target_size: int | None = None
        self._wake = asyncio.Event()

    def drain_to(self, size: int) -> None:
        """The job ended with the file at ``size`` bytes: stop once that much has been read."""
        self.target_size = size
        self._wake.set()

    def reached_target(self, fed: int) -> bool:
        return self.target_size is not None and fed >= self.target_size

    async def chunks(self, position: Callable[[], int]) -> AsyncIterator[bytes]:
        """Chunks from ``position()`` on, restarting the remote tail whenever it ends, until drained."""
        while not self.reached_target(position()):
            proc = await _start_unless_cancelled(self.session, commands.follow_file(self.path, position()))
            read: asyncio.Future[bytes] | None = None
            try:
                while not self.reached_target(position()):
                    read = read or asyncio.ensure_future(proc.read(READ_SIZE))
                    wake = asyncio.ensure_future(self._wake.wait())
                    await asyncio.wait({read, wake}, return_when=asyncio.FIRST_COMPLETED)
                    wake.cancel()
                    self._wake.clear()
                    if not read.done():
                        continue
                    try:
                        chunk = read.result()
                    except StreamBroken as err:  # the stream, not the run, ended: read on from where it stopped
                        log.warning("%s: %s; restarting the stream at byte %d", self.path, err, position())
                        chunk = b""
                    read = None
                    if not chunk:
                        break
                    yield chunk
            finally:
                if read is not None:
                    read.cancel()
                await proc.stop()
            if not self.reached_target(position()):
                await asyncio.sleep(RESTART_DELAY_S)


async def _start_unless_cancelled(session: HostSession, argv: list[str]) -> Any:
    """Start a stream; if we are cancelled meanwhile, stop the process that did start, then give up."""
    starting = asyncio.ensure_future(session.transport.start(argv))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        proc = await starting
        await proc.stop()
        raise


def run_fields_from(parser: RunSplitter) -> dict[str, Any]:
    """The run columns that mirror the parser's current verdict."""
    a = parser.analysis().to_json(file="")
    root = a.get("root_cause")
    fields: dict[str, Any] = {"phase": a["phase"], "root_cause": root}
    shards = a.get("shards")
    if shards:
        fields["shards_done"], fields["shards_total"] = shards["done"], shards["total"]
    if root:
        fields["signature"], fields["exception"] = root.get("signature"), root.get("exception")
    return fields


class LogFollower:
    def __init__(self, ctx: Context, session: HostSession, run: Run, notify: Callable[[Notice], None]) -> None:
        self.ctx: Context | None = ctx
        self.run_id = run.id
        self.notify = notify
        # A job's log may hold several runs (a script that restarts the server): read as `log analyze` reads it.
        self.parser = RunSplitter.restore(run.parser_state) if run.parser_state else RunSplitter()
        if not run.parser_state and run.log_offset:
            raise RuntimeError(f"run {run.id}: log offset without parser state")
        self.budget = EventBudget(run.event_counts)
        self.fed = self.parser.line_end_offset  # bytes handed to the parser, partial line included
        self.stream = _Stream(session, f"{run.remote_dir}/log")
        self.shown = ShownLines(self.fed)
        self.finished = asyncio.Event()

    @classmethod
    def reading(cls, session: HostSession, run_id: str, log_path: str, offset: int,
                notify: Callable[[Notice], None], *, until: int | None = None,
                skip_partial: bool = True) -> LogFollower:
        """A follower that records nothing: it announces the lines from ``offset`` on (the first, partial
        line skipped when ``offset`` > 0 and ``skip_partial``), up to ``until`` bytes when given, else for as
        long as it runs."""
        follower = cls.__new__(cls)
        follower.ctx = None
        follower.run_id, follower.notify = run_id, notify
        follower.parser, follower.budget = RunSplitter(), EventBudget(None)
        follower.fed = offset
        follower.stream = _Stream(session, log_path)
        follower.shown = ShownLines(offset, skip_partial=skip_partial)
        follower.finished = asyncio.Event()
        if until is not None:
            follower.stream.drain_to(until)
        return follower

    @property
    def log_failed(self) -> bool:
        """Whether the log alone proves a failure (turns an exit code 0 into ``failed``): the parser's verdict.

        That is a traceback, a ``cause`` signature (an empty ``ERROR: `` is ``empty_error``), or processes
        going down (symptoms) without a clean shutdown.  A bare ``ERROR`` record (a server rejecting one
        request) is not: the parser keeps it as evidence (the root cause while nothing showed the job going
        on after it) but never calls the log failed for it, so the run's phase and status agree.
        """
        return self.parser.analysis().failed

    async def run(self) -> None:
        finalized = False
        async for chunk in self.stream.chunks(lambda: self.fed):
            if self.stream.target_size is not None:
                chunk = chunk[: max(0, self.stream.target_size - self.fed)]
            self.fed += len(chunk)
            finalized = self.stream.reached_target(self.fed)
            if self.ctx is not None:
                events = self.parser.feed(chunk)
                if finalized:
                    events += self.parser.finish()
                self._commit(events, final=finalized)
            self._announce(self.shown.feed(chunk), final=finalized)
            if finalized:
                break
        if not finalized and self.stream.target_size is not None:
            if self.ctx is not None:
                self._commit(self.parser.finish(), final=True)
            self._announce([], final=True)
        self.finished.set()

    def _announce(self, lines: list[str], *, final: bool) -> None:
        if final and self.ctx is not None:  # a reader stops at ``until``: a line cut there is not shown
            lines += self.shown.finish()
        if lines:
            self.notify(LogLinesRead(self.run_id, tuple(lines), self.shown.offset))

    def _commit(self, events: list[Any], *, final: bool = False) -> None:
        offset = self.fed if final else self.parser.line_end_offset
        dicts = [e.to_dict() for e in events]
        # Counted in a copy: a commit that fails (database locked) leaves the budget as the history has it.
        budget = EventBudget(self.budget.snapshot())
        stored = budget.admit(dicts)
        if self.ctx is None:  # a reading follower records nothing
            return
        with self.ctx.db() as s:
            run = queries.run_row(s, self.run_id)
            if run is None:
                return
            if not events and offset == run.log_offset:
                return
            add_events(s, self.run_id, ((d["kind"], d.get("line_no"), d) for d in stored))
            # A new run in the log (the job started vLLM again): its phase starts over, it does not merge.
            new_run = self.parser.first_line != lines_before(run.parser_state) + 1
            run.log_offset = offset
            run.parser_state = self.parser.snapshot()
            run.event_counts = budget.snapshot()
            for key, value in run_fields_from(self.parser).items():
                setattr(run, key, merge_phase(run.phase, value) if key == "phase" and not new_run else value)
            for d in dicts:
                if d["kind"] == "shards_progressed":
                    run.shards_rate, run.shards_eta_s = d.get("rate_per_s"), d.get("eta_s")
                elif d["kind"] == "progress_reported" and run.kind == "command":
                    run.progress_done, run.progress_total = d.get("done"), d.get("total")
        self.budget = budget
        self.notify(RunProgressed(self.run_id, tuple(dicts)))


class StepEventFollower:
    """Follows ``events.jsonl`` written by eorch's own recipes (worker/events.py)."""

    def __init__(self, ctx: Context, session: HostSession, run: Run, notify: Callable[[Notice], None]) -> None:
        self.ctx = ctx
        self.run_id = run.id
        self.notify = notify
        self.committed = run.events_offset
        self.buffer = b""
        self.stream = _Stream(session, f"{run.remote_dir}/events.jsonl")
        self.finished = asyncio.Event()

    async def run(self) -> None:
        async for chunk in self.stream.chunks(lambda: self.committed + len(self.buffer)):
            self.buffer += chunk
            end = self.buffer.rfind(b"\n")
            if end >= 0:
                lines, self.buffer = self.buffer[: end + 1], self.buffer[end + 1 :]
                self._commit(lines)
        self.finished.set()

    def _commit(self, lines: bytes) -> None:
        records = []
        for raw in lines.splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
        with self.ctx.db() as s:
            run = queries.run_row(s, self.run_id)
            if run is None:
                return
            add_events(s, self.run_id, ((f"step_{r.get('kind', 'unknown')}", None, r) for r in records))
            for r in records:
                apply_step_event(run, r)
            self.committed += len(lines)
            run.events_offset = self.committed
        self.notify(RunProgressed(self.run_id, tuple({"kind": f"step_{r.get('kind')}", **r} for r in records)))


def apply_step_event(run: Run, record: dict[str, Any]) -> None:
    kind = record.get("kind")
    if kind in ("server_kept", "retry", "step"):
        from orchestrator.actions.warmserver import apply_warm_event

        run.warm_server = apply_warm_event(run.warm_server, record)
    if kind == "progress":
        run.progress_done, run.progress_total, run.progress_rate = (
            record.get("done"), record.get("total"), record.get("rate"))
    elif kind == "outputs":
        gate = (run.outputs or {}).get("first_sample")
        run.outputs = {k: record.get(k) for k in ("dir", "samples", "verified", "bytes", "stray_locks",
                                                  "client_errors", "first_client_error")}
        if gate is not None:
            run.outputs["first_sample"] = gate
    elif kind == "step" and record.get("step") == "gate" and record.get("state") in ("done", "failed"):
        detail = record.get("detail") or {}
        run.outputs = {**(run.outputs or {}), "first_sample": {"verified": record["state"] == "done", **detail}}
    elif kind == "canary":
        from orchestrator.core.canary import canary_record

        run.canary = canary_record(record)
    elif kind == "step" and record.get("step") == "extract" and record.get("state") == "started":
        run.phase = merge_phase(run.phase, "running")
