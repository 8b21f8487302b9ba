"""Figure: the first parse in a fresh process, with and without the kept compiled search sets (session 37).

    .venv/bin/python bench/first_parse_bench.py [--runs 7] [LOG]

``eorch log analyze`` parses one log and exits, so it always pays for its first parse: compiling the ~20
Hyperscan needle sets the parser asks for is ~17 ms of it.  The CLI keeps them in ``$EORCH_HOME/cache/hyperscan``
(``native.keep_compiled_in``).  Each round runs two child processes back to back, one compiling (nothing kept)
and one loading the kept sets (kept by a warm-up child first), each timing ``analyze_path(LOG)`` after a
warm-up parse of an empty log (imports, catalogue); medians of ``--runs`` rounds.  LOG defaults to the ``once``
mix of ``bench/logparse_bench.py`` (every real log of tests/data/real and tests/data/logs, once: 0.8 MB).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import logparse_bench  # the mixes

CHILD = """
import sys, time
from pathlib import Path
from orchestrator.logparse import analyze_path, native
if sys.argv[2] != "-":
    native.keep_compiled_in(Path(sys.argv[2]))
empty = Path(sys.argv[3])
analyze_path(empty)
t = time.perf_counter()
analyze_path(sys.argv[1])
print(time.perf_counter() - t)
"""


def _child(log: Path, kept: str, empty: Path) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(log), kept, str(empty)], capture_output=True, text=True,
                         check=True)
    return float(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="the log to parse (default: the once mix)")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        log = Path(a.log) if a.log else tmpdir / "once.log"
        if not a.log:
            logparse_bench.build_once(log, 0)
        empty = tmpdir / "empty.log"
        empty.write_bytes(b"")
        kept = tmpdir / "hyperscan"
        _child(log, str(kept), empty)  # keeps the sets
        compiled, loaded = [], []
        for _ in range(a.runs):
            compiled.append(_child(log, "-", empty))
            loaded.append(_child(log, str(kept), empty))
        mb = log.stat().st_size / 1e6
        c, k = statistics.median(compiled) * 1000, statistics.median(loaded) * 1000
        print(f"first parse of {log.name} ({mb:.2f} MB), median of {a.runs}: sets compiled {c:.1f} ms "
              f"({mb / c * 1000:.1f} MB/s), sets kept {k:.1f} ms ({mb / k * 1000:.1f} MB/s); kept/compiled {k / c:.2f}")


if __name__ == "__main__":
    main()
