"""One pre-started Python for every step that needs the speculators env: imports once, then runs modules on order.

Child side (run with the speculators env's python)::

    python -m worker.recipes.warm [--quiet LOGGER]... MODULE_TO_IMPORT...

imports the modules, then reads JSON lines from stdin, one order each::

    {"module": "speculators", "argv": ["generate-offline-data", "--endpoint", ...]}

runs the module as ``__main__`` and writes ``{"rc": N}`` to the result pipe (fd ``$EORCH_WARM_RESULT_FD``)
when it returns.  EOF on stdin ends the process with ``os._exit``: torch's and datasets' finalizers take
a second or more on a small box, and nothing is left to flush by then.

Parent side: :class:`WarmPython`.  The recipe starts it while the vLLM server is still loading, so the seconds
spent importing torch, datasets and the speculators CLI overlap the server's start, and count → prepare →
extract → verify then share those imports instead of paying for them four times on a box whose cores the
server needs.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import runpy
import select
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from worker.recipes.proc import Child

RESULT_FD_ENV = "EORCH_WARM_RESULT_FD"
BARRIER_ENV = "EORCH_WARM_BARRIER"


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def run_order(order: dict[str, object]) -> int:
    """Runs one module as ``__main__`` with the order's argv; returns its exit status."""
    module = str(order["module"])
    argv = [str(a) for a in order.get("argv", [])]  # type: ignore[attr-defined]
    sys.argv = [module, *argv]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException:  # noqa: BLE001 - the order failed, the runner goes on to report it
        traceback.print_exc()
        return 1
    return 0


def _import_all(modules: list[str]) -> None:
    """Imports at the lowest CPU priority (Linux nice is per thread): on a small box the server starting
    beside us needs the cores more, and an order waits for this thread anyway."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - best effort: the order imports again and reports it
            sys.stderr.write(f"warm: cannot pre-import {name}: {exc}\n")


def main(argv: list[str]) -> int:
    quiet: list[str] = []
    modules: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "--quiet":
            quiet.append(next(it))
        else:
            modules.append(arg)
    importer = threading.Thread(target=_import_all, args=(modules,), name="warm-imports", daemon=True)
    importer.start()
    result_fd = int(os.environ.get(RESULT_FD_ENV, "-1"))
    barrier = os.environ.get(BARRIER_ENV, "").encode()
    stdin = sys.stdin
    sys.stdin = open(os.devnull)  # noqa: SIM115 - orders come on the real stdin only
    while line := stdin.readline():
        if not line.strip():
            continue
        for name in quiet:  # one INFO line per HTTP request is noise in a million-sample run log
            logging.getLogger(name).setLevel(logging.WARNING)
        importer.join()
        rc = run_order(json.loads(line))
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        if barrier:  # after everything the order wrote, in the same pipe: the parent tees all of it first
            os.write(1, barrier + b"\n")
        if result_fd >= 0:
            os.write(result_fd, (json.dumps({"rc": rc}) + "\n").encode())
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


class WarmPython:
    """The parent's handle on a warm child: send orders one at a time, collect each one's exit status."""

    def __init__(self, name: str, python: str, modules: list[str], env: dict[str, str], log_path: Path,
                 on_line: Callable[[bytes], None] | None = None,
                 quiet: tuple[str, ...] = ("httpx", "httpx2"), tee: bool = True) -> None:
        self._r, w = os.pipe()
        barrier = f"\x1eeorch-warm-{os.urandom(6).hex()}\x1e"
        self._orders = 0
        argv = [python, "-m", "worker.recipes.warm"]
        for name_ in quiet:
            argv += ["--quiet", name_]
        try:
            self.child = Child(name, [*argv, *modules], {**env, RESULT_FD_ENV: str(w), BARRIER_ENV: barrier},
                               log_path, prefix=f"[{name}] ".encode(), on_line=on_line, stdin_pipe=True,
                               pass_fds=(w,), tee=tee, barrier=barrier.encode())
        finally:
            os.close(w)
        self._buf = b""
        self.busy = False

    def order(self, module: str, argv: list[str]) -> None:
        assert not self.busy, "one order at a time"
        assert self.child.proc.stdin is not None
        self.child.proc.stdin.write((json.dumps({"module": module, "argv": argv}) + "\n").encode())
        self.child.proc.stdin.flush()
        self.busy = True
        self._orders += 1

    def result(self, timeout: float) -> int | None:
        """The running order's exit status, or None while it runs.  A child that died reports its own."""
        if b"\n" not in self._buf and self._r >= 0:
            ready, _, _ = select.select([self._r], [], [], timeout)
            if ready:
                chunk = os.read(self._r, 4096)
                self._buf += chunk
                if not chunk:  # the child is gone (or going): its exit status follows
                    os.close(self._r)
                    self._r = -1
                    self._reap()
        elif b"\n" not in self._buf:
            time.sleep(timeout)
        if b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self.busy = False
            # the order's last lines may still be in the pipe: its status comes after them, never before
            self.child.wait_barrier(self._orders, timeout=30)
            return int(json.loads(line)["rc"])
        rc = self.child.poll()
        if rc is not None:
            self.busy = False
            return rc if rc != 0 else 1  # it exited without reporting the order: that is a failure
        return None

    def wait(self, timeout: float) -> int:
        """Blocks until the running order ends (or ``timeout`` passes: TimeoutError)."""
        deadline = time.monotonic() + timeout
        while (rc := self.result(min(1.0, max(0.0, deadline - time.monotonic())))) is None:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.child.name} order still running after {timeout}s")
        return rc

    def _reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):  # still running: poll() says so later
            self.child.wait(timeout=10)

    def close(self) -> None:
        """Ends the child (EOF on its stdin); it exits without the interpreter's slow teardown."""
        stdin = self.child.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:
                pass
        if self._r >= 0:
            os.close(self._r)
            self._r = -1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
