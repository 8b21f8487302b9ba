"""Issue 15: the verdict of a followed run and of ``eorch log analyze`` agree, on every real log collected.

The monitor reads a log as it grows: a ``RunSplitter`` fed in chunks, its snapshot stored as JSON after each
and restored on the next round, re-reading from ``line_end_offset`` (the partial line).  Offline analysis
reads the whole file.  A log the offline reader had to reshape or transcode first (a paste hard-wrapped or
double-spaced, UTF-16 from PowerShell: ``notes`` says so) is left out: the monitor reads what the job wrote."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.runs import RunSplitter

DATA = Path(__file__).resolve().parents[2] / "data"
SETS = sorted(p.name for p in DATA.iterdir() if (p / "expected.json").exists())


def _said(data: dict[str, Any]) -> tuple[Any, ...]:
    rc = data["root_cause"] or {}
    return (data["failed"], data["phase"], rc.get("exception"), rc.get("message"), rc.get("process"),
            json.dumps(data["earlier_runs"], sort_keys=True))


def followed(data: bytes, rng: random.Random) -> dict[str, Any]:
    parser, pos, restored_at = RunSplitter(), 0, 0
    while pos < len(data):
        step = rng.choice([61, 997, 4099])
        parser.feed(data[pos:pos + step])
        pos += step
        if pos < len(data) and parser.line_end_offset > restored_at:
            snap = json.loads(json.dumps(parser.snapshot()))
            pos = restored_at = parser.line_end_offset
            parser = RunSplitter.restore(snap)
    parser.finish()
    return parser.analysis().to_json(file="x")


@pytest.mark.parametrize("name", SETS)
def test_a_followed_run_says_what_log_analyze_says(name: str) -> None:
    rng = random.Random(name)
    checked, wrong = 0, []
    for path in sorted((DATA / name).glob("*.log")):
        data = path.read_bytes()
        notes: list[str] = []
        offline = analyze_bytes(data, notes).to_json(file="x")
        if notes:
            continue
        checked += 1
        got, want = _said(followed(data, rng)), _said(offline)
        if got != want:
            wrong.append(f"{path.name}: followed {got} / analyzed {want}")
    assert checked and not wrong, "\n".join(wrong)
