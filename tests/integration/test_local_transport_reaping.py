"""The `local` host's processes are reaped before the event loop ends, whatever cancels them.

A process left unreaped keeps its asyncio transport open; it is then collected after its loop closed
("Exception ignored in BaseSubprocessTransport.__del__ ... Event loop is closed"), as the TUI did when a
quitting worker was cancelled again while the transport was still waiting for a killed child.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import warnings
from collections.abc import Coroutine
from typing import Any

from orchestrator.remote.transport import LocalTransport, RemoteProcess

#: A process that ignores SIGTERM: only a kill ends it.
STUBBORN = [sys.executable, "-c", ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                   "print('up', flush=True); time.sleep(60)")]
PLAIN = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]


def _no_unclosed_transports(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` in a loop of its own, then collect: no transport may be left open (warned of, or failing
    to close on a closed loop)."""
    gc.collect()  # what earlier tests left is not ours
    problems: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: problems.append(f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", ResourceWarning)
            asyncio.run(main)
            del main
            gc.collect()
            gc.collect()
        problems += [str(w.message) for w in seen if "unclosed transport" in str(w.message)]
    finally:
        sys.unraisablehook = hook
    assert not problems, problems


async def _started(t: LocalTransport, argv: list[str]) -> RemoteProcess:
    """``argv`` started, once it printed that it is up."""
    proc = await t.start(argv)
    assert (await proc.readline()) == b"up\n"
    return proc


def test_a_run_cancelled_twice_is_killed_and_reaped() -> None:
    async def main() -> None:
        t = LocalTransport()
        task = asyncio.ensure_future(t.run(STUBBORN, timeout=None))
        await asyncio.sleep(0.5)
        for _ in range(5):  # as the TUI does: cancel, and cancel again while it cleans up
            task.cancel()
            await asyncio.sleep(0)
        try:
            await task
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the cancellation was lost")

    _no_unclosed_transports(main())


def test_stop_kills_a_process_that_ignores_sigterm_when_cancelled() -> None:
    async def main() -> None:
        t = LocalTransport()
        proc = await _started(t, STUBBORN)
        stopping = asyncio.ensure_future(proc.stop())
        await asyncio.sleep(0.3)  # inside the SIGTERM grace period
        stopping.cancel()
        try:
            await stopping
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the cancellation was lost")
        assert not proc.running()  # type: ignore[attr-defined]

    _no_unclosed_transports(main())


def test_close_stops_what_start_left_running() -> None:
    async def main() -> None:
        t = LocalTransport()
        proc = await _started(t, PLAIN)
        await t.close()
        assert not proc.running()  # type: ignore[attr-defined]

    _no_unclosed_transports(main())
