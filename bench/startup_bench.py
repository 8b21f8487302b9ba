"""Figure: CLI start-up time, median of N, side by side with ``python -c pass`` (issue 16).

    .venv/bin/python bench/startup_bench.py [--runs 10] [--json]

Each command runs as a child process of the installed console script (``.venv/bin/eorch``, as a user runs
it) against a fresh ``$EORCH_HOME`` in a temp dir whose history was created (migrated) by one warm-up call;
``eorch runs`` then lists an empty history. Wall time and CPU time (user + sys of the child, from
``wait4``; less disturbed by a busy machine than wall time) are reported as medians. Goal: ``eorch --help``
and ``eorch runs`` <= 0.15 s wall on a quiet machine where ``python -c pass`` is ~0.02 s; on a loaded
machine compare the ratio to ``python -c pass`` in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EORCH = str(Path(sys.executable).parent / "eorch")
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "eorch --help": [EORCH, "--help"],
    "eorch runs": [EORCH, "runs"],
    "eorch runs --json": [EORCH, "runs", "--json"],
    "eorch launch --help": [EORCH, "launch", "--help"],
}


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eorch-startup-") as home:
        env = {**os.environ, "EORCH_HOME": home, "COLUMNS": "120"}
        _once([EORCH, "runs"], env)  # creates and migrates the history
        results = {}
        for name, argv in COMMANDS.items():
            samples = [_once(argv, env) for _ in range(args.runs)]
            results[name] = {"wall_s": statistics.median(w for w, _ in samples),
                             "cpu_s": statistics.median(c for _, c in samples)}
    base = results["python -c pass"]
    if args.json:
        print(json.dumps({"runs": args.runs, "results": results}, indent=2))
        return 0
    print(f"median of {args.runs}        wall      cpu    wall - python -c pass")
    for name, r in results.items():
        print(f"{name:22} {r['wall_s']:6.3f} s {r['cpu_s']:6.3f} s    {r['wall_s'] - base['wall_s']:+.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
