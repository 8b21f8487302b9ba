"""Figure: what the funnel's needle search alone costs, against the whole parse (issue 15's 300 MB/s).

    .venv/bin/python bench/funnel_ceiling_bench.py [--mb 20] [--runs 3] [--json]

``eorch log analyze`` finds the lines worth reading with literal needles (``logparse/funnel.py``): 43 of
them while the log is starting, 29 once it serves.  CPython has no multi-pattern search, so each needle (or
group of needles with one leading byte) costs a pass over the bytes.  This measures, on the mixes of
``logparse_bench.py`` (same builders), CPU seconds of:

* ``parse``: the whole parse (``analyze_path``);
* ``regex_each`` / ``find_each``: one ``re`` finditer / one ``bytes.find`` walk per needle, all needles of
  the starting phase (the funnel's worst case: nothing has dropped out yet);
* ``alternation``: one regex of all those needles (``a|b|c``), the single-pass alternative ``re`` offers;
* ``regex_each_blocked``: the per-needle passes over 256 KiB blocks (does keeping a block in cache help?).

Each as MB/s (size / CPU seconds), medians of ``--runs``.  Needle search alone bounds the parse from above.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logparse_bench

from orchestrator.logparse import analyze_path
from orchestrator.logparse.funnel import build_funnel
from orchestrator.logparse.phases import Phase
from orchestrator.logparse.signatures import load_catalogue

BLOCK = 256 * 1024


def _cpu(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def measure(path: Path, runs: int) -> dict[str, float]:
    buf = path.read_bytes()
    needles = build_funnel(load_catalogue()).relevant(Phase.STARTING, False, False)
    each = [re.compile(re.escape(n)) for n in needles]
    alternation = re.compile(b"|".join(re.escape(n) for n in sorted(needles, key=len, reverse=True)))

    def regex_each(lo: int = 0, hi: int = len(buf)) -> list[int]:
        return [m.start() for rx in each for m in rx.finditer(buf, lo, hi)]

    def find_each() -> int:
        found, find = 0, buf.find
        for n in needles:
            i = find(n)
            while i >= 0:
                found += 1
                i = find(n, i + 1)
        return found

    def blocked() -> int:
        return sum(len(regex_each(lo, min(len(buf), lo + BLOCK))) for lo in range(0, len(buf), BLOCK))

    mb = len(buf) / 1e6
    figures = {
        "parse": _cpu(lambda: analyze_path(path), runs),
        "regex_each": _cpu(regex_each, runs),
        "find_each": _cpu(find_each, runs),
        "alternation": _cpu(lambda: [m.start() for m in alternation.finditer(buf)], runs),
        "regex_each_blocked": _cpu(blocked, runs),
    }
    return {"mb": round(mb, 1), "needles": len(needles), **{k: round(mb / v, 1) for k, v in figures.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=20, help="size of each log, in MiB (default 20)")
    ap.add_argument("--runs", type=int, default=3, help="rounds; medians are reported (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON only")
    args = ap.parse_args()
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mix, build in (("serve", logparse_bench.build_serve), ("real", logparse_bench.build_real),
                           ("concat", logparse_bench.build_concat)):
            path = Path(tmp) / f"{mix}.log"
            build(path, args.mb * 2**20)
            out[mix] = measure(path, args.runs)
            path.unlink()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'mix':8} {'MB':>6} {'parse':>8} {'regex_each':>11} {'find_each':>10} {'alternation':>12} "
          f"{'blocked':>8}   (MB/s of CPU time; {next(iter(out.values()))['needles']:.0f} needles)")
    for mix, f in out.items():
        print(f"{mix:8} {f['mb']:6.1f} {f['parse']:8.1f} {f['regex_each']:11.1f} {f['find_each']:10.1f} "
              f"{f['alternation']:12.1f} {f['regex_each_blocked']:8.1f}")


if __name__ == "__main__":
    main()
