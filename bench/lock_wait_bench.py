"""How long speculators' client waits for a hidden-states file after its writer unlocks it: as released
(0.9.0) vs with the shipped `deploy/patches/speculators-lock-wait` applied.

    python bench/lock_wait_bench.py [--python ENGINE_PY] [--trials 40] [--hold-ms 5]

Run with the engine python (it imports speculators). Both module versions are loaded side by side from the
installed source, the patched one through eorch's own diff engine (worker/unidiff.py). A writer thread takes
the `.lock` (as vLLM's connector does before the response) and releases it `--hold-ms` later (the write);
the client's `wait_for_lock_async` starts at once. Reports the delay from release to acquisition, median
and p95, per version. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import importlib.util
import json
import statistics
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from worker.unidiff import apply_hunks, parse_diff

SET = REPO / "deploy" / "patches" / "speculators-lock-wait"


def load(name: str, source: str, path: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - our own copies of the installed module
    return module


def trial(module: types.ModuleType, lock: Path, hold_s: float) -> float:
    lock.touch()
    held, released = threading.Event(), [0.0]

    def writer() -> None:
        with open(lock) as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            held.set()
            time.sleep(hold_s)
            released[0] = time.monotonic()
        # closing the file releases the lock

    t = threading.Thread(target=writer)
    t.start()
    held.wait()
    asyncio.run(module.wait_for_lock_async(str(lock), timeout=10))
    acquired = time.monotonic()
    t.join()
    return acquired - released[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--hold-ms", type=float, default=5.0)
    a = ap.parse_args(argv)
    spec = importlib.util.find_spec("speculators.data_generation.vllm_client")
    assert spec is not None and spec.origin is not None, "run with the engine python (speculators installed)"
    original = Path(spec.origin).read_text()
    diff = parse_diff((SET / "vllm_client.diff").read_text())[0]
    versions = {"released": load("vc_released", original, spec.origin),
                "patched": load("vc_patched", apply_hunks(original, diff), spec.origin)}
    result: dict[str, object] = {"trials": a.trials, "hold_ms": a.hold_ms}
    with tempfile.TemporaryDirectory() as tmp:
        delays: dict[str, list[float]] = {name: [] for name in versions}
        for i in range(a.trials):  # interleaved, so drift on a shared box hits both
            for name, module in versions.items():
                delays[name].append(trial(module, Path(tmp) / f"{name}-{i}.lock", a.hold_ms / 1000))
    for name, values in delays.items():
        ms = sorted(v * 1000 for v in values)
        result[name] = {"median_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
