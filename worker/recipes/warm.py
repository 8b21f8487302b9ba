"""A pre-started Python that imports heavy modules, then runs one module as ``__main__`` when told to.

    python -m worker.recipes.warm MODULE_TO_IMPORT...    # then, on stdin, one JSON line:
    {"module": "speculators", "argv": ["generate-offline-data", "--endpoint", ...]}

The recipe starts it while the vLLM server is still loading, so the seconds spent importing torch, datasets
and the speculators CLI overlap the server's start instead of following it.  EOF on stdin (the recipe went
away) exits quietly with 0 and runs nothing.
"""

from __future__ import annotations

import importlib
import json
import runpy
import sys


def main(argv: list[str]) -> int:
    for name in argv:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # the real run reports it properly; warming is best effort
            sys.stderr.write(f"warm: cannot pre-import {name}: {exc}\n")
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    order = json.loads(line)
    sys.argv = [order["module"], *order["argv"]]
    sys.stdin = open("/dev/null")  # noqa: SIM115 - the order was the only input
    runpy.run_module(order["module"], run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
