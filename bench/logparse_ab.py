"""Figure: the parser's scan speed at two revisions, side by side in one run (issue 15).

    .venv/bin/python bench/logparse_ab.py --old REV [--new REV] [--mb 20] [--mix serve|extract|requests|concat|real|once|all] [--runs 5]

A change to the parser is worth a few per cent at a time, and this box's speed drifts more than that between
runs, so old and new must meet the same load: each round parses every log once with each revision,
alternating, each in a fresh interpreter.  The revisions are checked out in temporary git worktrees (``--new``
defaults to the working tree).  Each parse is timed in CPU seconds after a warm-up parse of an empty log:
loading the catalogue and compiling patterns is start-up, which ``logparse_bench.py`` measures.  The logs are
``logparse_bench.py``'s mixes.  Prints medians, bests and the ratio new/old of the medians.

Each side runs its own build of the parser by mypyc (``scripts/build_parser.py``): a revision in a worktree gets an
interpreter environment of its own (a venv without pip whose ``.pth`` reaches this one's packages) to build into,
as the build lives under ``sys.prefix`` and is used only where its stamp matches the sources.  A side whose build
fails or is stale runs on the Python modules, and the script says so: its ratio then compares unlike things.
"""

from __future__ import annotations

import argparse
import site
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import logparse_bench

REPO = Path(__file__).resolve().parent.parent
_TIMED = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from orchestrator.logparse import analyze_path
analyze_path(sys.argv[3])
t = time.process_time()
analyze_path(sys.argv[2])
print(os.path.getsize(sys.argv[2]) / 2**20 / (time.process_time() - t))
"""
_BUILDERS = logparse_bench.BUILDERS


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(into), rev], check=True)
    return into


def _interpreter(root: Path, into: Path) -> str:
    """The Python that runs ``root``'s parser: this one for the working tree, else a venv of its own (reaching this
    one's packages) with ``root``'s sources compiled into it; warns when the parser there is not compiled."""
    python = sys.executable
    if root != REPO:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(into)], check=True)
        python = str(into / "bin" / "python")
        own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                             text=True, check=True).stdout.strip()
        Path(own, "eorch-ab.pth").write_text(site.getsitepackages()[0] + "\n")
        subprocess.run([python, str(root / "scripts" / "build_parser.py")], cwd=root, capture_output=True, check=False)
    check = subprocess.run([python, str(root / "scripts" / "build_parser.py"), "--check"], cwd=root,
                           capture_output=True, text=True, check=False)
    if check.returncode != 0:
        print(f"note: {root.name}'s parser is not compiled; it runs on the Python modules", file=sys.stderr)
    return python


def _speed(python: str, root: Path, log: Path, empty: Path) -> float:
    out = subprocess.run([python, "-c", _TIMED, str(root), str(log), str(empty)], capture_output=True,
                         text=True, check=True, cwd=root)
    return float(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="the revision to compare against (e.g. HEAD~3)")
    ap.add_argument("--new", help="the revision to measure (default: the working tree)")
    ap.add_argument("--mb", type=int, default=20, help="size of each log, in MiB (default 20)")
    ap.add_argument("--mix", choices=[*_BUILDERS, "all"], default="all")
    ap.add_argument("--runs", type=int, default=5, help="rounds; medians are reported (default 5)")
    args = ap.parse_args()
    mixes = list(_BUILDERS) if args.mix == "all" else [args.mix]
    with tempfile.TemporaryDirectory(prefix="eorch-ab-") as tmp:
        base = Path(tmp)
        roots = {"old": _worktree(args.old, base / "old"),
                 "new": _worktree(args.new, base / "new") if args.new else REPO}
        try:
            pythons = {which: _interpreter(root, base / f"venv-{which}") for which, root in roots.items()}
            empty = base / "empty.log"
            empty.write_bytes(b"")
            logs = {}
            for mix in mixes:
                logs[mix] = base / f"{mix}.log"
                _BUILDERS[mix](logs[mix], args.mb * 2**20)
            speeds: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.runs):
                for mix, log in logs.items():
                    for which, root in roots.items():
                        speeds.setdefault((mix, which), []).append(_speed(pythons[which], root, log, empty))
            print(f"parse CPU speed, MB/s (median and best of {args.runs} alternated rounds, {args.mb} MiB logs)")
            for mix in mixes:
                old, new = speeds[(mix, "old")], speeds[(mix, "new")]
                print(f"  {mix:7} old {statistics.median(old):7.1f} (best {max(old):.1f})   "
                      f"new {statistics.median(new):7.1f} (best {max(new):.1f})   "
                      f"new/old {statistics.median(new) / statistics.median(old):.2f}x")
        finally:
            for which, root in roots.items():
                if root != REPO:
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(root)],
                                   check=False)


if __name__ == "__main__":
    main()
