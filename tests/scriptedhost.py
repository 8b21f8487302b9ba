"""A scripted host for fast monitor tests: a ``Transport`` (orchestrator.remote.transport) with nothing behind it.

Injected through ``Context(transport_for=...)``, not patched in (httpx's ``MockTransport`` is the model).
Its worker agent answers ``status_many`` from the test's runs (``ScriptedRun``: alive, exited with an rc,
directory gone, ...), and its ``tail`` hands out the bytes of each run's log as a file on the host would,
but only as far as the test lets it (``ScriptedFile.hold_at``): so a test decides what the monitor has read
when the host reports an ``rc``. A truncated file is read again from its start and a replaced one from the
new file's start, as GNU ``tail -F`` does.

The argv it understands are exactly those ``orchestrator.core.commands`` builds; anything else fails loudly.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.core import commands
from orchestrator.errors import HostUnreachable, StreamBroken
from orchestrator.remote.transport import Completed, RemoteProcess

ROOT = "/scripted-root"
_inodes = itertools.count(1000)


class ScriptedFile:
    """A file on the scripted host: its bytes, inode, and how far a ``tail`` may read it now."""

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.inode = next(_inodes)
        self.readable_to: int | None = None  # None: all of it
        self.mtime = time.time()
        self._changed = asyncio.Event()

    def _touch(self) -> None:
        self.mtime = time.time()
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def write(self, data: bytes) -> None:
        """Append, as the job writing its log."""
        self.data += data
        self._touch()

    def truncate_to(self, data: bytes) -> None:
        """The same file (inode) cut and rewritten: ``> log; echo ... >> log``."""
        self.data = bytearray(data)
        self._touch()

    def replace(self, data: bytes) -> None:
        """A new file in its place (a new inode): ``mv new log``."""
        self.data = bytearray(data)
        self.inode = next(_inodes)
        self._touch()

    def hold_at(self, offset: int) -> None:
        """A tail hands out no byte at or past ``offset`` (a slow link, a large backlog) until released."""
        self.readable_to = offset
        self._touch()

    def release(self) -> None:
        self.readable_to = None
        self._touch()

    async def changed(self) -> None:
        await self._changed.wait()


@dataclass
class ScriptedRun:
    """One run's directory on the scripted host and what its liveness report says."""

    run_dir: str
    log: ScriptedFile = field(default_factory=ScriptedFile)
    exists: bool = True
    started: bool = True
    alive: bool = True
    rc: int | None = None
    rc_mtime: float | None = None
    cancel_requested: bool = False
    boot_changed: bool = False
    scheduler: dict[str, Any] | None = None
    reports: int = 0  # how many liveness reports the host gave about it
    reports_since_exit: int = 0

    def exit(self, rc: int) -> None:
        self.alive, self.rc, self.rc_mtime = False, rc, time.time()

    def report(self) -> dict[str, Any]:
        self.reports += 1
        self.reports_since_exit += self.rc is not None
        out: dict[str, Any] = {
            "run_dir": self.run_dir, "exists": self.exists, "marked_pids": [],
            "cancel_requested": self.cancel_requested, "started": self.started and self.exists,
            "rc": self.rc if self.exists else None, "alive": self.alive and self.rc is None and self.exists,
            "boot_changed": self.boot_changed,
            "log_size": len(self.log.data) if self.exists else None,
            "log_inode": self.log.inode if self.exists else None,
            "events_size": None, "log_mtime": self.log.mtime if self.exists else None,
            "events_mtime": None, "rc_mtime": self.rc_mtime if self.exists else None,
        }
        if self.scheduler is not None:
            out["scheduler"] = dict(self.scheduler)
        return out


class _OpCrashed(Exception):
    """The scripted worker fails an operation (``ScriptedTransport.crash_next_ops``)."""


class _Agent:
    """``worker.cli agent``: one JSON request a line in, one reply a line out."""

    def __init__(self, host: ScriptedTransport) -> None:
        self.host = host
        self.replies: asyncio.Queue[bytes] = asyncio.Queue()

    async def write(self, data: bytes) -> None:
        if not self.host.connected:
            raise BrokenPipeError("the scripted host dropped the link")
        for line in data.splitlines():
            request = json.loads(line)
            try:
                reply = {"id": request["id"], "ok": True, "result": self.host.answer(request["op"], request["args"])}
            except LookupError as err:
                reply = {"id": request["id"], "ok": False, "error": str(err)}
            except _OpCrashed as err:  # as worker/cli.py answers an exception in an op
                reply = {"id": request["id"], "ok": False, "error": str(err), "kind": "crashed",
                         "where": "ops.py:1 in status_many"}
            self.replies.put_nowait(json.dumps(reply).encode() + b"\n")

    async def readline(self) -> bytes:
        if not self.host.connected:
            return b""
        return await self.replies.get()

    async def read(self, n: int) -> bytes:
        raise AssertionError("the agent is read by lines")

    async def stop(self) -> None:
        return None


class _Tail:
    """``tail -c +N -F path``: the file's bytes from an offset, following appends, truncations, replacements."""

    def __init__(self, host: ScriptedTransport, path: str, offset: int) -> None:
        self.host = host
        self.path = path
        self.position = offset
        self.inode: int | None = None
        self.stopped = False

    def _file(self) -> ScriptedFile | None:
        run = self.host.runs.get(self.path.rsplit("/", 1)[0])
        return run.log if run is not None and run.exists and self.path.endswith("/log") else None

    async def read(self, n: int) -> bytes:
        while not self.stopped and self.host.connected:
            file = self._file()
            if file is None:
                raise AssertionError(f"the scripted host has no file {self.path}")
            if self.inode is not None and file.inode != self.inode or len(file.data) < self.position:
                self.position = 0  # replaced, or truncated under us: tail -F starts on the new content
            self.inode = file.inode
            end = len(file.data) if file.readable_to is None else min(len(file.data), file.readable_to)
            broken_at = self.host.break_tail_at
            if broken_at is not None and self.position < end:
                if self.position >= broken_at:  # the SSH channel fails (a reset): the link itself stays up
                    self.host.break_tail_at = None
                    raise StreamBroken(self.host.name, "the channel broke while reading: connection reset")
                end = min(end, broken_at)
            if self.position < end:
                chunk = bytes(file.data[self.position: min(end, self.position + n)])
                self.position += len(chunk)
                self.host.bytes_served += len(chunk)
                return chunk
            await file.changed()
        return b""

    async def readline(self) -> bytes:
        raise AssertionError("a tail is read in chunks")

    async def write(self, data: bytes) -> None:
        raise AssertionError("a tail takes no input")

    async def stop(self) -> None:
        self.stopped = True
        self.host.tails.discard(self)


class ScriptedTransport:
    """Implements ``orchestrator.remote.transport.Transport`` for one scripted host."""

    name = "scripted"

    def __init__(self, python: str = "python3") -> None:
        self.python = python
        self.runs: dict[str, ScriptedRun] = {}
        self.connected = False
        self.unreachable: str | None = None  # set: connecting fails with this
        self.connects = 0
        self.worker_dir = ""
        self.tails: set[_Tail] = set()
        self.tail_starts = 0
        self.fail_next_tail: BaseException | None = None  # the next tail fails to start with this
        self.break_tail_at: int | None = None  # set: a tail that has read this far breaks (StreamBroken), once
        self.crash_next_ops = 0  # this many status_many requests are answered with a worker's crash reply
        self.bytes_served = 0

    def add_run(self, run_dir: str, log: bytes = b"") -> ScriptedRun:
        run = self.runs[run_dir] = ScriptedRun(run_dir, ScriptedFile(log))
        return run

    def answer(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op != "status_many":
            raise LookupError(f"the scripted host has no op {op!r}")
        if self.crash_next_ops > 0:
            self.crash_next_ops -= 1
            raise _OpCrashed("eorch's worker failed: OSError: [Errno 5] Input/output error")
        return {"runs": [self.runs[d].report() for d in args["run_dirs"]], "boot_id": "scripted-boot",
                "now": time.time()}

    def drop_link(self, why: str) -> None:
        """The connection breaks (the agent channel closes, tails end) and cannot be made again until
        ``unreachable`` is cleared."""
        self.connected, self.unreachable = False, why
        for run in self.runs.values():
            run.log._touch()

    # ------------------------------------------------------------------------------------------ Transport

    async def connect(self) -> None:
        self.connects += 1
        if self.unreachable is not None:
            raise HostUnreachable(self.name, self.unreachable)
        self.connected = True

    def is_connected(self) -> bool:
        return self.connected

    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 60) -> Completed:
        argv = list(argv)
        if argv == commands.resolve_root(self.python, argv[-1]):
            return Completed(tuple(argv), 0, json.dumps({"root": ROOT}).encode(), b"")
        if argv == commands.unpack_worker(self.python, argv[-1]):
            self.worker_dir = argv[-1]
            return Completed(tuple(argv), 0, b"", b"")
        raise AssertionError(f"the scripted host was not told how to run {argv}")

    async def start(self, argv: Sequence[str]) -> RemoteProcess:
        argv = list(argv)
        if not self.connected:
            raise HostUnreachable(self.name, "not connected")
        if self.worker_dir and argv == commands.worker_agent(self.python, self.worker_dir):
            return _Agent(self)
        if argv[:2] == ["tail", "-c"]:
            path, offset = argv[-1], int(argv[2].lstrip("+")) - 1
            assert argv == commands.follow_file(path, offset), argv
            self.tail_starts += 1
            if self.fail_next_tail is not None:
                error, self.fail_next_tail = self.fail_next_tail, None
                raise error
            tail = _Tail(self, path, offset)
            self.tails.add(tail)
            return tail
        raise AssertionError(f"the scripted host was not told how to start {argv}")

    async def close(self) -> None:
        self.connected = False


async def until(condition: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    """Wait (on the event loop) until ``condition()`` is true; fail naming ``what`` after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
