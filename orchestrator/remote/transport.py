"""How eorch reaches a host: the ``Transport`` seam and the local implementation.

``LocalTransport`` runs argv as local subprocesses (the built-in ``local`` host); ``orchestrator.remote.ssh``
has the SSH one. Both hand out ``RemoteProcess`` streams and ``Completed`` results.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    exit_status: int | None
    stdout: bytes
    stderr: bytes


class RemoteProcess(Protocol):
    async def read(self, n: int) -> bytes: ...
    async def readline(self) -> bytes: ...
    async def write(self, data: bytes) -> None: ...
    async def stop(self) -> None: ...


class Transport(Protocol):
    name: str

    async def connect(self) -> None: ...
    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 60) -> Completed: ...
    async def start(self, argv: Sequence[str]) -> RemoteProcess: ...
    async def close(self) -> None: ...
    def is_connected(self) -> bool: ...


# ---------------------------------------------------------------------------------------------- local


class _LocalProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    def running(self) -> bool:
        return self._proc.returncode is None

    async def read(self, n: int) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(n)

    async def readline(self) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.readline()

    async def write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def stop(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        if self._proc.returncode is None:
            try:
                self._proc.terminate()
            except ProcessLookupError:
                pass
        await _reap(self._proc, grace=5)


async def _reap(proc: asyncio.subprocess.Process, grace: float = 0) -> None:
    """Wait for a process told to stop, killing it after ``grace`` seconds or at a cancellation, and go on
    waiting through cancellations (the TUI cancels a quitting worker again and again).  Its transport is
    closed at the end, even when the loop drops this coroutine unfinished: a transport left open is collected
    after its loop closed ("Event loop is closed").  A cancellation is raised once the process is reaped."""
    waiter = asyncio.ensure_future(proc.wait())
    cancelled = False
    timeout: float | None = max(grace, 0)
    try:
        while not waiter.done():
            try:
                await asyncio.wait_for(asyncio.shield(waiter), timeout)
            except asyncio.CancelledError:
                cancelled = True
            except TimeoutError:
                pass
            if not waiter.done() and timeout is not None:
                timeout = None
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
    finally:
        transport = getattr(proc, "_transport", None)  # asyncio's Process has no public close
        if transport is not None and not transport.is_closing():
            with contextlib.suppress(RuntimeError):  # the loop is closed already: the transport is marked closed
                transport.close()
    if cancelled:
        raise asyncio.CancelledError


def controller_free_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for the `local` host's worker (and so its jobs): the user's, without eorch's own
    settings (``EORCH_*``: the history's home, alert URLs with their tokens), as a job on an SSH host has."""
    return {k: v for k, v in environ.items() if not k.startswith("EORCH_")}


class LocalTransport:
    """Runs argv as local subprocesses, without a shell, in the user's environment less eorch's own."""

    name = "local"

    def __init__(self) -> None:
        self._started: list[_LocalProcess] = []

    async def connect(self) -> None:
        return None

    def is_connected(self) -> bool:
        return True

    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 60) -> Completed:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env=controller_free_env(os.environ),
            )
        except OSError as err:
            return Completed(tuple(argv), 127, b"", f"{argv[0]}: {err.strerror}".encode())
        try:
            out, errout = await asyncio.wait_for(proc.communicate(input), timeout)
        except BaseException:  # timed out or cancelled (Ctrl-C): kill and reap it now, not after the loop closed
            await _reap(proc)
            raise
        return Completed(tuple(argv), proc.returncode, out, errout)

    async def start(self, argv: Sequence[str]) -> RemoteProcess:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            env=controller_free_env(os.environ),
            limit=1 << 24,
        )
        self._started = [p for p in self._started if p.running()]
        local = _LocalProcess(proc)
        self._started.append(local)
        return local

    async def close(self) -> None:
        """Stop the processes ``start`` left running (a follower the caller did not stop)."""
        started, self._started = self._started, []
        for p in started:
            await p.stop()
