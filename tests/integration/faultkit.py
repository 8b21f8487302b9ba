"""What the fault-injection suite shares: jobs with a known log, and the exact events a log must give.

The history must hold, for every run, exactly the events that parsing the remote log once, from start to
end, gives (after the per-run event budget): ``assert_history_matches_log`` compares the two as multisets
of ``(kind, line_no)``, so a line recorded twice, or not at all, fails it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from helpers import db_rows, wait_for

from orchestrator.core.eventbudget import EventBudget
from orchestrator.logparse import LogParser

# Kinds that come from the log parser (status changes, truncations and the like are the monitor's facts).
LOG_KINDS = ("phase_changed", "shards_progressed", "progress_reported", "error_seen", "traceback_completed",
             "signature_matched", "root_cause_found")


def error_lines_job(count: int, *, prefix: str = "request", flag: Path | None = None, every_s: float = 0.0) -> str:
    """A job printing ``count`` distinct vLLM ERROR records (or until ``flag`` exists), then exiting 0."""
    stop = f"os.path.exists({str(flag)!r})" if flag else "False"
    limit = "True" if flag else f"i < {count}"
    return (
        "import os, time\n"
        "i = 0\n"
        f"while {limit} and not (i >= {count} and {stop}):\n"
        f"    print(f'ERROR 12-01 10:00:00 [engine.py:42] {prefix} {{i}} rejected: input too long', flush=True)\n"
        "    i += 1\n"
        f"    if {every_s}: time.sleep({every_s})\n"
    )


def expected_events(log: bytes) -> tuple[Counter[tuple[str, int | None]], dict[str, int]]:
    """The events one pass of the parser over the whole log stores, through the same per-run budget, and
    how many of each budgeted kind it saw."""
    parser = LogParser()
    budget = EventBudget()
    dicts = [e.to_dict() for e in parser.feed(log) + parser.finish()]
    kept = budget.admit(dicts)
    return Counter((d["kind"], d.get("line_no")) for d in kept), budget.seen


def recorded_events(home: Path, run_id: str) -> Counter[tuple[str, int | None]]:
    marks = ",".join("?" * len(LOG_KINDS))
    rows = db_rows(home, f"select kind, line_no from events where run_id=? and kind in ({marks})",
                   run_id, *LOG_KINDS)
    return Counter((k, n) for k, n in rows)


def assert_history_matches_log(home: Path, run: dict) -> tuple[int, int]:
    """Every line once: the recorded events are exactly those of the remote log; (lines, events)."""
    log = Path(run["remote_dir"], "log").read_bytes()
    (expected, expected_seen), recorded = expected_events(log), recorded_events(home, run["id"])
    missing, extra = expected - recorded, recorded - expected
    assert not missing and not extra, f"missing {sum(missing.values())}, extra {sum(extra.values())}: " \
                                      f"{list(missing.items())[:3]} {list(extra.items())[:3]}"
    offset, counts = db_rows(home, "select log_offset, event_counts from runs where id=?", run["id"])[0]
    assert offset == len(log)
    assert (json.loads(counts) if counts else {}).get("seen", {}) == expected_seen
    lines, stored = log.count(b"\n"), sum(recorded.values())
    # The figures of the closing note: `pytest tests/integration/test_faults.py -s | grep fault-figures`.
    print(f"fault-figures run={run['id']} lines={lines} events_stored={stored} events_seen={expected_seen}")
    return lines, stored


def kinds_of(home: Path, run_id: str) -> list[str]:
    return [k for (k,) in db_rows(home, "select kind from events where run_id=? order by id", run_id)]


def status_events(home: Path, run_id: str) -> list[dict]:
    rows = db_rows(home, "select data from events where run_id=? and kind='status' order by id", run_id)
    return [json.loads(d) for (d,) in rows]


class DbHolder:
    """Another process holding the history's write lock (as a long `eorch prune` does) for ``hold_s``."""

    SCRIPT = (
        "import os, sqlite3, sys, time\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)\n"
        "if len(sys.argv) > 3:\n"
        "    print('held', flush=True)\n"
        "    while not os.path.isdir(sys.argv[3]) or not os.listdir(sys.argv[3]): time.sleep(0.001)\n"
        "conn.execute('BEGIN IMMEDIATE')\n"
        "conn.execute(\"delete from events where ts < '2000-01-01'\")\n"
        "print('held', flush=True)\n"
        "sys.stdin.read() if sys.argv[2] == 'until-released' else time.sleep(float(sys.argv[2]))\n"
        "conn.execute('COMMIT')\n"
    )

    def __init__(self, home: Path, hold_s: float | None, *, when_exists: Path | None = None) -> None:
        """``hold_s`` None: hold until ``release()`` — a test that needs the lock held *while* something runs
        must not bet on how fast that runs on a loaded box.  ``when_exists``: take the lock only once something
        appears in that directory (returns at once)."""
        trigger = [str(when_exists)] if when_exists else []
        hold = "until-released" if hold_s is None else str(hold_s)
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, str(home / "eorch.db"), hold, *trigger],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "held"

    def wait(self, timeout: float = 60) -> None:
        self.proc.wait(timeout)

    def release(self, timeout: float = 60) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout)


def hold_db_briefly(home: Path, hold_s: float) -> None:
    """Hold the write lock for ``hold_s`` and release it (blocking the caller meanwhile)."""
    holder = DbHolder(home, hold_s)
    holder.wait()


def db_is_writable(home: Path) -> bool:
    try:
        with sqlite3.connect(home / "eorch.db", timeout=0.1) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.rollback()
        return True
    except sqlite3.OperationalError:
        return False


def wait_until(predicate, timeout: float = 60, what: str = "condition"):  # type: ignore[no-untyped-def]
    """helpers.wait_for with the fault suite's longer default."""
    return wait_for(predicate, timeout=timeout, what=what)
