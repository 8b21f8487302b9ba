"""A job whose log holds several tries (a script that starts `vllm serve` again after it failed): the monitor
judges it by its last try, as `eorch log analyze` judges the same log, and `show` lists the tries before it."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import add_testbox, eorch, launch, show, wait_for

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
FAILED = REAL / "r27_flashinfer_import_typeerror_py311.log"  # vLLM 0.11 on Python 3.11: TypeError at import
CLEAN = REAL / "r20_dgxspark_dflash_clean_sigterm_shutdown.log"  # served, then stopped on SIGTERM


def _follow(tmp_path: Path, *logs: Path) -> tuple[dict, dict]:
    """A job that prints ``logs`` one after the other and exits 0, followed to its end; its record and
    `eorch log analyze --json` of the log it wrote on the host."""
    add_testbox(tmp_path)
    run = launch("sh", "-c", 'cat "$@"; exit 0', "sh", *map(str, logs))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    log = Path(record["remote_dir"]) / "log"  # the host is this machine: the file a user would copy
    return record, json.loads(eorch("log", "analyze", "--json", str(log)).stdout)[0]


class TestTries:
    def test_a_failed_try_then_a_clean_one_is_not_a_failed_run(self, eorch_home: Path, tmp_path: Path) -> None:
        record, analyzed = _follow(tmp_path, FAILED, CLEAN)
        assert (record["status"], record["phase"], record["root_cause"]) == ("succeeded", "stopped", None)
        assert (analyzed["failed"], analyzed["phase"], analyzed["root_cause"]) == (False, "stopped", None)
        assert record["earlier_runs"] == analyzed["earlier_runs"]
        (earlier,) = record["earlier_runs"]
        assert earlier["failed"] and earlier["root_cause"]["exception"] == "TypeError"
        text = eorch("show", record["id"]).stdout
        assert f"earlier: try 1 of 2 (lines 1-{earlier['last_line']}): FAILED: TypeError: " in text

    def test_a_clean_try_then_a_failed_one_is_a_failed_run(self, eorch_home: Path, tmp_path: Path) -> None:
        """Exit status 0, but the last try failed: the log proves the failure, as `log analyze` says."""
        record, analyzed = _follow(tmp_path, CLEAN, FAILED)
        assert (record["status"], record["root_cause"]["exception"]) == ("failed", "TypeError")
        assert analyzed["failed"] and analyzed["root_cause"]["exception"] == "TypeError"
        assert record["root_cause"]["message"] == analyzed["root_cause"]["message"]
        assert [e["failed"] for e in record["earlier_runs"]] == [e["failed"] for e in analyzed["earlier_runs"]]

    def test_while_the_next_try_loads_its_phase_is_loading_not_the_last_failure(self, eorch_home: Path,
                                                                               tmp_path: Path) -> None:
        """The job started vLLM again after a failed try and is loading: that is its phase (phases only move
        forward within a try; a new try starts over)."""
        add_testbox(tmp_path)
        again = ["INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
                 "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]"]
        run = launch("sh", "-c", 'cat "$1"; sleep 6; printf "%s\\n" "$2" "$3"; sleep 120', "sh", str(FAILED), *again)
        try:
            wait_for(lambda: show(run["id"])["phase"] == "failed", timeout=60, what="the first try's failure")
            record = wait_for(lambda: (r := show(run["id"]))["phase"] == "loading" and r, timeout=60,
                              what="the second try's phase")
            assert record["status"] == "running" and record["root_cause"] is None
            assert [e["failed"] for e in record["earlier_runs"]] == [True]
        finally:
            eorch("cancel", run["id"], check=False)
