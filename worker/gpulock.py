"""GPU locks on a host: which eorch run holds which GPU, so a second run is refused before it loads.

Stdlib only.  One file per GPU index, ``ROOT/locks/gpu-N.json`` = ``{"run_id", "run_dir", "boot_id",
"locked_at"}``, created with ``O_EXCL`` by the launch op before the wrapper starts.  The wrapper removes its
run's locks once it has written ``rc`` (``release``).  A lock left behind is broken only when its run is
provably gone: the run directory is missing, the host rebooted since, the run wrote ``rc``, or the wrapper
recorded in ``wrapper.json`` is dead (pid + start time), or that wrapper never started (no ``wrapper.json``
two minutes after launch).  A run whose wrapper has not recorded itself yet is "unknown" and keeps its lock.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from worker import procs

LOCK_DIR = "locks"
NEVER_STARTED_S = 120  # the launch op gives a wrapper 15 s to record itself


class GpuBusy(Exception):
    """A GPU is held by another eorch run that is not provably gone."""


def _lock_path(root: str, index: int) -> str:
    return os.path.join(root, LOCK_DIR, f"gpu-{int(index)}.json")


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def holder_state(lock: dict[str, Any]) -> tuple[str, str]:
    """("held" | "gone" | "unknown", why) for the run named in a lock."""
    run_dir = str(lock.get("run_dir") or "")
    if lock.get("boot_id") and lock["boot_id"] != procs.boot_id():
        return "gone", "the host rebooted since the lock was taken"
    if not run_dir or not os.path.isdir(run_dir):
        return "gone", f"its run directory {run_dir or '?'} no longer exists"
    if os.path.exists(os.path.join(run_dir, "rc")):
        return "gone", "the run ended (rc written)"
    wrapper = _read(os.path.join(run_dir, "wrapper.json"))
    if not wrapper:
        launched = (_read(os.path.join(run_dir, "meta.json")) or {}).get("launched_at")
        if isinstance(launched, (int, float)) and time.time() - launched > NEVER_STARTED_S:
            return "gone", f"its wrapper never started (launched {time.time() - launched:.0f} s ago)"
        return "unknown", "its wrapper has not recorded itself yet"
    if wrapper.get("boot_id") and wrapper["boot_id"] != procs.boot_id():
        return "gone", "the host rebooted since the run started"
    if procs.is_same_process(int(wrapper["pid"]), wrapper.get("start_time")):
        return "held", f"its wrapper pid {wrapper['pid']} is alive"
    return "gone", f"its wrapper pid {wrapper['pid']} is dead and left no rc"


def holders(root: str) -> list[dict[str, Any]]:
    """Every GPU lock under root with its holder's state."""
    lock_dir = os.path.join(root, LOCK_DIR)
    try:
        names = sorted(os.listdir(lock_dir))
    except OSError:
        return []
    found = []
    for name in names:
        if not (name.startswith("gpu-") and name.endswith(".json")) or not name[4:-5].isdigit():
            continue
        lock = _read(os.path.join(lock_dir, name)) or {}
        state, why = holder_state(lock)
        found.append({"gpu": int(name[4:-5]), "run_id": lock.get("run_id"), "run_dir": lock.get("run_dir"),
                      "state": state, "why": why})
    return found


def acquire(root: str, run_id: str, run_dir: str, gpus: list[int], force: bool = False) -> dict[str, Any]:
    """Take the locks of ``gpus`` for a run, all or none; a lock of a provably gone run is broken.

    ``force``: GPUs another live run holds are skipped (reported under ``skipped``) instead of refused."""
    os.makedirs(os.path.join(root, LOCK_DIR), exist_ok=True)
    body = json.dumps({"run_id": run_id, "run_dir": run_dir, "boot_id": procs.boot_id(), "locked_at": time.time()})
    taken: list[int] = []
    broken: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    try:
        for gpu in gpus:
            path = _lock_path(root, gpu)
            for _ in range(3):  # a lock broken here may be re-taken by a racing launch: look again
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    lock = _read(path) or {}
                    state, why = holder_state(lock)
                    if state == "gone":
                        _remove_if_same(path, lock)
                        broken.append({"gpu": gpu, "run_id": lock.get("run_id"), "why": why})
                        continue
                    held = {"gpu": gpu, "run_id": lock.get("run_id"), "state": state, "why": why}
                    if force:
                        skipped.append(held)
                        break
                    raise GpuBusy(f"GPU {gpu} is held by eorch run {lock.get('run_id')} ({why}); cancel it or "
                                  "wait for it to end") from None
                with os.fdopen(fd, "w") as f:
                    f.write(body)
                taken.append(gpu)
                break
    except BaseException:
        for gpu in taken:
            _remove_if_same(_lock_path(root, gpu), {"run_dir": run_dir})
        raise
    return {"taken": taken, "broken": broken, "skipped": skipped}


def _remove_if_same(path: str, lock: dict[str, Any]) -> None:
    current = _read(path)
    if current is not None and current.get("run_dir") == lock.get("run_dir"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def release(run_dir: str) -> list[int]:
    """Remove the locks a run holds (ROOT is two levels above its run directory); the GPUs released."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(run_dir)))
    released = []
    for held in holders(root):
        if held["run_dir"] == run_dir:
            _remove_if_same(_lock_path(root, held["gpu"]), {"run_dir": run_dir})
            released.append(held["gpu"])
    return released
