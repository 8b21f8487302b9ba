"""Figure: the verdicts a change to the parser won and lost against an older revision, on every blind set (issue 15).

    .venv/bin/python bench/verdict_compare.py --old REV [--sets 'tests/data/wild*'] [--transforms] [--pasted]

Every set is scored by ``verdict_score.py`` twice: with the working tree's parser, and with REV's (checked out in a
temporary git worktree) on the same data files, so a set collected after REV is scored by REV too.  Prints both
totals, every (log, form) wrong now that REV got right, and how many REV got wrong that are right now.  Compare
against the revision *before* the change: a parser change lands with nothing lost.  Exits 1 when something was
lost.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _wrong(root: Path, directory: Path, flags: list[str]) -> tuple[int, int, set[tuple[str, str]]]:
    """(right, total, the (log, form) pairs judged wrong) of one set, scored by ``root``'s parser."""
    out = subprocess.run([sys.executable, str(root / "bench" / "verdict_score.py"), str(directory), "--json", *flags],
                         capture_output=True, text=True, check=True, cwd=root)
    result = json.loads(out.stdout)
    wrong = {(f"{directory.name}/{r['file']}", r["form"]) for r in result["rows"] if r["wrong"] is not None}
    return result["right"], result["total"], wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the revision to compare with (the one before the change)")
    ap.add_argument("--sets", default="tests/data/wild*", help="a glob of set directories, relative to the repo")
    ap.add_argument("--transforms", action="store_true", help="also score the collectors' and terminals' forms")
    ap.add_argument("--pasted", action="store_true", help="also score the forms a paste puts around a log")
    args = ap.parse_args()
    flags = [f for f, on in (("--transforms", args.transforms), ("--pasted", args.pasted)) if on]
    sets = sorted((d for d in REPO.glob(args.sets) if (d / "expected.json").is_file()), key=lambda d: d.name)
    if not sets:
        print(f"no set matches {args.sets!r} (a directory with an expected.json)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="eorch-verdicts-") as tmp:
        old_root = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(old_root), args.old],
                       check=True)
        try:
            totals = {"old": [0, 0], "new": [0, 0]}
            lost: list[tuple[str, str]] = []
            won = 0
            for directory in sets:
                wrong = {}
                for which, root in (("old", old_root), ("new", REPO)):
                    right, total, wrong[which] = _wrong(root, directory, flags)
                    totals[which][0] += right
                    totals[which][1] += total
                lost += sorted(wrong["new"] - wrong["old"])
                won += len(wrong["old"] - wrong["new"])
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old_root)], check=False)
    for which in ("old", "new"):
        right, total = totals[which]
        print(f"{which:>3}: {right}/{total} right verdicts ({right / total:.1%}) on {len(sets)} sets")
    print(f"won: {won}, lost: {len(lost)}")
    for log, form in lost:
        print(f"  lost {log} [{form}]")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
