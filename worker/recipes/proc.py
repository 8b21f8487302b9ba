"""Child processes of a recipe: own process group, a run marker in the env, log tee, group stop.

Every child is started with ``start_new_session=True`` so a whole vLLM tree (APIServer, EngineCore, workers)
shares one process group that can be TERMed and KILLed together, and with ``EORCH_RECIPE_MARKER`` in its
environment so leftovers can be found even if something changed its group.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from worker import procs

MARKER_KEY = "EORCH_RECIPE_MARKER"
_OUT_LOCK = threading.Lock()


def say(message: str) -> None:
    """A human line on the recipe's stdout (the run log), never interleaved with teed child lines."""
    line = f"[eorch] {message}\n".encode()
    with _OUT_LOCK:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


class Child:
    """A child process group whose output is teed line by line into a file and the run log."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        log_path: Path,
        prefix: bytes = b"",
        on_line: Callable[[bytes], None] | None = None,
        cwd: str | None = None,
        stdin_pipe: bool = False,
        pass_fds: tuple[int, ...] = (),
        tee: bool = True,
        barrier: bytes | None = None,
    ) -> None:
        self.name = name
        self._barrier = barrier  # a line holding it is not output: it says all output before it was teed
        self._passed = threading.Condition()
        self.barriers_passed = 0
        self._pump_done = False
        self._tee_out = tee  # False: the file only (a canary's server stays out of the run log)
        self.argv = list(argv)
        self.log_path = log_path
        self._prefix = prefix
        self._on_line = on_line
        self.tail: deque[str] = deque(maxlen=4000)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - closed by the tee thread
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=pass_fds,
        )
        self.pgid = self.proc.pid
        self._tee = threading.Thread(target=self._pump, name=f"tee-{name}", daemon=True)
        self._tee.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                at = raw.find(self._barrier) if self._barrier is not None else -1
                if at < 0:
                    self._emit(raw)
                    continue
                if at:  # text the child left without a newline before the barrier
                    self._emit(raw[:at] + b"\n")
                with self._passed:
                    self.barriers_passed += 1
                    self._passed.notify_all()
        finally:
            self._log.close()
            with self._passed:
                self._pump_done = True
                self._passed.notify_all()

    def _emit(self, raw: bytes) -> None:
        self._log.write(raw)
        self._log.flush()
        if self._tee_out:
            with _OUT_LOCK:
                sys.stdout.buffer.write(self._prefix + raw)
                sys.stdout.buffer.flush()
        self.tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if self._on_line is not None:
            self._on_line(raw)

    def wait_barrier(self, count: int, timeout: float) -> bool:
        """Waits until ``count`` barrier lines were read (every line the child wrote before them is teed)."""
        with self._passed:
            return self._passed.wait_for(lambda: self.barriers_passed >= count or self._pump_done, timeout)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        rc = self.proc.wait(timeout)
        self._tee.join(timeout=5)
        return rc

    def stop(self, grace_s: float) -> dict[str, object]:
        """TERM the group, wait up to ``grace_s``, then KILL it; returns what happened."""
        t0 = time.monotonic()
        killed = False
        procs.signal_group(self.pgid, signal.SIGTERM)
        deadline = t0 + grace_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not group_alive(self.pgid):
                break
            time.sleep(0.2)
        else:
            killed = True
        if killed or group_alive(self.pgid):
            killed = True
            procs.signal_group(self.pgid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._tee.join(timeout=5)
        return {"name": self.name, "rc": self.proc.returncode, "killed": killed,
                "seconds": round(time.monotonic() - t0, 2)}


def group_alive(pgid: int) -> bool:
    return procs.group_alive(pgid)


def pids_with_marker(value: str) -> list[int]:
    """Live processes (same user) whose environment carries ``EORCH_RECIPE_MARKER=value``."""
    return procs.pids_with_marker(MARKER_KEY, value)


def kill_marked(value: str, grace_s: float = 5.0) -> list[int]:
    """TERM then KILL every process carrying the marker; returns the pids that had to be killed."""
    pids = pids_with_marker(value)
    procs.signal_pids(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        pids = pids_with_marker(value)
    procs.signal_pids(pids, signal.SIGKILL)
    return pids


def gpu_pids() -> dict[int, int] | None:
    """pid → used MiB from ``nvidia-smi``; ``None`` where there is no nvidia-smi."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    usage: dict[int, int] = {}
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            usage[int(parts[0])] = int(parts[1]) if parts[1].isdigit() else 0
    return usage


def wait_gpu_release(pids: set[int], timeout_s: float) -> tuple[list[int] | None, float]:
    """Which of ``pids`` nvidia-smi still shows holding GPU memory, after waiting up to ``timeout_s`` for none
    to: the driver lists a killed process for a moment after it is gone (seen on an H200: ~0.1 s).  Returns
    (held pids or None without nvidia-smi, seconds waited)."""
    t0 = time.monotonic()
    while True:
        gpu = gpu_pids()
        waited = round(time.monotonic() - t0, 3)
        if gpu is None:
            return None, waited
        held = sorted(pids & set(gpu))
        if not held or waited >= timeout_s:
            return held, waited
        time.sleep(0.1)


def dist_versions(python: str, dists: tuple[str, ...]) -> dict[str, str]:
    """Installed versions of ``dists`` in the environment of ``python`` (missing ones left out)."""
    code = ("import importlib.metadata as m, json, sys\nv = {}\nfor d in sys.argv[1:]:\n"
            "    try: v[d] = m.version(d)\n    except m.PackageNotFoundError: pass\nprint(json.dumps(v))")
    out = subprocess.run([python, "-c", code, *dists], capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(out.stdout))
