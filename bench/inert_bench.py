"""Figure: cost of making log lines inert (logparse.inert) in the parser's ``decode``, against the ANSI-only
strip it replaced, on the real vLLM fixture lines of tests/data/logs (coloured prefixes, tqdm frames, NULs).

    .venv/bin/python bench/inert_bench.py [--mb 50] [--runs 5]

Prints MB/s of each (best of ``--runs``, CPU time of this process) and the ratio.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from orchestrator.logparse.lines import LINE_CAP, decode

LOGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "logs"
_OLD_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def old_decode(raw: bytes) -> str:
    if len(raw) > LINE_CAP:
        raw = raw[:LINE_CAP]
    text = raw.decode("utf-8", "replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\x1b" in text:
        text = _OLD_ANSI_RE.sub("", text)
    return text


def best_mb_s(fn, lines: list[bytes], size: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for line in lines:
            fn(line)
        best = min(best, time.process_time() - start)
    return size / best / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sample = [line for p in sorted(LOGS.glob("*.log")) for line in re.split(rb"\r\n|\r|\n", p.read_bytes())]
    sample_size = sum(map(len, sample)) or 1
    lines = sample * max(1, int(args.mb * 1e6 / sample_size))
    size = sum(map(len, lines))
    coloured = sum(1 for line in sample if b"\x1b" in line) / len(sample)
    old = best_mb_s(old_decode, lines, size, args.runs)
    new = best_mb_s(decode, lines, size, args.runs)
    print(f"{size / 1e6:.0f} MB of fixture lines ({len(lines)} lines, {coloured:.0%} with escape codes)")
    print(f"old ANSI strip: {old:.0f} MB/s   inert: {new:.0f} MB/s   inert/old: {new / old:.2f}")


if __name__ == "__main__":
    main()
