"""Figure: CLI start-up time, median of N, side by side with ``python -c pass`` (issue 16).

    .venv/bin/python bench/startup_bench.py [--runs 10] [--json] [--live] [--instructions]

Each command runs as a child process of the installed console script (``.venv/bin/eorch``, as a user runs
it) against a fresh ``$EORCH_HOME`` in a temp dir whose history was created (migrated) by one warm-up call;
``eorch runs`` then lists an empty history, then three ended runs (its short path: cli/quickruns.py), then the
same through the full path (``EORCH_QUICK=0``) side by side. Wall time and CPU time (user + sys
of the child and its children, from ``wait4``; less disturbed by a busy machine than wall time) are reported
as medians. Goal: ``eorch --help`` and ``eorch runs`` <= 0.15 s wall on a quiet machine where ``python -c
pass`` is ~0.02 s; on a loaded machine compare the ratio to ``python -c pass`` in the same run.

``--live`` adds ``eorch runs`` with one live run (``sleep`` on the built-in ``local`` host, launched with
``--no-monitor``): every listing then refreshes it on its host first (orchestrator/monitoring/refresh.py), the "status
never lies" path. ``--instructions`` also counts the instructions of one call of each command under
valgrind's callgrind: the same on a quiet and a loaded machine (``python -c pass`` is ~0.09 G).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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
LIVE = "eorch runs (1 live run)"
ENDED = "eorch runs (3 ended runs)"
FULL = "  same, EORCH_QUICK=0"  # the full path (typer, SQLAlchemy, settings) on the same history


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def _instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions executed by one call (valgrind --tool=callgrind; its own children not traced)."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True, timeout=600)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if match is None:
        raise SystemExit(f"valgrind gave no count for {' '.join(argv)}: {proc.stderr[-500:]}")
    return int(match.group(1))


def _launch_live(env: dict[str, str]) -> str:
    out = subprocess.run([EORCH, "launch", "--host", "local", "--no-monitor", "--json", "--name", "bench-live",
                          "--", "sleep", "600"], env=env, capture_output=True, text=True, check=True, timeout=120)
    return str(json.loads(out.stdout)["id"])


def _ended_runs(env: dict[str, str]) -> None:
    """Three runs on `local` that have ended and are recorded so (the history most listings read)."""
    ids = []
    for code in ("0", "3", "0"):
        out = subprocess.run([EORCH, "launch", "--host", "local", "--no-monitor", "--json", "--", sys.executable, "-c",
                              f"raise SystemExit({code})"], env=env, capture_output=True, text=True, check=True,
                             timeout=120)
        ids.append(str(json.loads(out.stdout)["id"]))
    subprocess.run([EORCH, "watch", *ids, "--until-done"], env=env, capture_output=True, timeout=300, check=False)


def _measure(results: dict[str, dict[str, float]], name: str, argv: list[str], env: dict[str, str],
             args: argparse.Namespace) -> None:
    samples = [_once(argv, env) for _ in range(args.runs)]
    results[name] = {"wall_s": statistics.median(w for w, _ in samples),
                     "cpu_s": statistics.median(c for _, c in samples)}
    if args.instructions:
        results[name]["instructions"] = _instructions(argv, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--live", action="store_true", help="also `eorch runs` with one live run to refresh")
    parser.add_argument("--instructions", action="store_true", help="also count instructions (needs valgrind)")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="eorch-startup-") as home:
        env = {**os.environ, "EORCH_HOME": home, "COLUMNS": "120"}
        _once([EORCH, "runs"], env)  # creates and migrates the history
        commands = dict(COMMANDS)
        for name, argv in commands.items():
            _measure(results, name, argv, env, args)
        _ended_runs(env)
        _measure(results, ENDED, [EORCH, "runs"], env, args)
        _measure(results, FULL, [EORCH, "runs"], {**env, "EORCH_QUICK": "0"}, args)
        if args.live:
            run_id = _launch_live(env)
            try:
                _measure(results, LIVE, [EORCH, "runs"], env, args)
            finally:
                subprocess.run([EORCH, "cancel", run_id, "--grace", "1"], env=env, capture_output=True, timeout=120,
                               check=False)
    base = results["python -c pass"]
    if args.json:
        print(json.dumps({"runs": args.runs, "results": results}, indent=2))
        return 0
    print(f"median of {args.runs}             wall      cpu    wall - python -c pass"
          + ("    instructions" if args.instructions else ""))
    for name, r in results.items():
        line = f"{name:26} {r['wall_s']:6.3f} s {r['cpu_s']:6.3f} s    {r['wall_s'] - base['wall_s']:+.3f} s"
        if args.instructions:
            line += f"    {r['instructions'] / 1e9:9.2f} G"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
