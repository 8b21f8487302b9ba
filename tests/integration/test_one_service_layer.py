"""The CLI and the TUI read one service layer: what a similar run is, what a run header says, how a status,
a duration and a time stamp read are each decided in one place, so the two cannot drift apart."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from helpers import eorch, show

FINGERPRINT = "f" * 32
BASE = datetime(2026, 11, 20, 8, 0, 0)
CAUSE = {"exception": "torch.OutOfMemoryError", "message": "CUDA out of memory", "signature": "cuda_oom"}


def _add_runs(*runs: dict[str, Any]) -> None:
    from orchestrator.context import Context
    from orchestrator.store.models import Run

    with Context.load().db() as s:
        for kw in runs:
            s.add(Run(**{"kind": "command", "command": ["python", "serve.py"], "env": {}, "cwd": None,
                         "host": "local", "phase": "failed", "log_offset": 0, "events_offset": 0,
                         "cancel_requested": False, **kw}))


def _failed(run_id: str, minutes: int, fingerprint: str, **kw: Any) -> dict[str, Any]:
    return {"id": run_id, "name": f"serve-{run_id}", "status": "failed", "exit_code": 1,
            "created_at": BASE + timedelta(minutes=minutes), "started_at": BASE + timedelta(minutes=minutes),
            "ended_at": BASE + timedelta(minutes=minutes, seconds=42), "root_cause": CAUSE,
            "signature": "cuda_oom", "exception": "torch.OutOfMemoryError", "fingerprint": fingerprint, **kw}


class TestSimilarRuns:
    def test_cli_and_tui_list_the_same_similar_runs(self, eorch_home: Path) -> None:
        """Only earlier runs with the same fingerprint: not a later one, not one that shares only the signature
        (the TUI once matched fingerprint OR signature at any time)."""
        from orchestrator.context import Context
        from tui.data import load_detail

        _add_runs(_failed("aa000001", 0, FINGERPRINT), _failed("aa000002", 10, "0" * 32),
                  _failed("aa000003", 20, FINGERPRINT, env={"VLLM_USE_V1": "0"}),
                  _failed("aa000004", 30, FINGERPRINT))
        cli = json.loads(eorch("similar", "aa000003", "--json").stdout)
        assert [m["run"]["id"] for m in cli["similar"]] == ["aa000001"]
        detail = load_detail(Context.load(), "aa000003", BASE + timedelta(hours=1))
        assert [m.id for m in detail.similar] == ["aa000001"]
        assert detail.similar[0].changed == "env: VLLM_USE_V1 None→0"


class TestRunHeader:
    def test_the_tui_header_shows_the_patch_set_as_show_does(self, eorch_home: Path) -> None:
        """`eorch show` and the TUI's run header print the same patch-set line (the TUI once left it out)."""
        from orchestrator.context import Context
        from tui.data import load_detail
        from tui.widgets.run_panels import header_text

        patch_set = {"name": "fix-kv-cache", "files": {"vllm/a.py": "1" * 64, "vllm/b.py": "2" * 64},
                     "verified_at": "2026-11-20T07:59:00Z"}
        _add_runs(_failed("bb000001", 0, FINGERPRINT, patch_set=patch_set))
        line = "patch set: fix-kv-cache (2 files, verified 2026-11-20T07:59:00Z)"
        assert line in eorch("show", "bb000001", "--no-refresh").stdout
        header = header_text(load_detail(Context.load(), "bb000001", BASE + timedelta(hours=1))).plain
        assert line in header


class TestOneWayToRead:
    def test_one_status_colour_for_the_cli_and_the_tui(self) -> None:
        """Every status has the same colour in `eorch runs`/`show` and in the TUI."""
        from orchestrator.cli import listing
        from orchestrator.cli import show as show_cmd
        from orchestrator.core.runstate import RunStatus
        from tui.format import status_text

        for status in RunStatus:
            cli_style = listing.STATUS_STYLE.get(status.value, "")
            assert show_cmd.STATUS_STYLE.get(status.value, "") == cli_style
            assert str(status_text(status.value).style) == cli_style, status

    def test_stats_reads_durations_as_the_tui_does(self, eorch_home: Path) -> None:
        """`eorch stats` writes 42 seconds as `42s`, like every other duration (it once wrote `0m42s`)."""
        from orchestrator.core.humanize import span

        _add_runs(_failed("cc000001", 0, FINGERPRINT))
        out = eorch("stats").stdout
        assert span(42) == "42s" and " 42s " in out and "0m42s" not in out

    def test_json_time_stamps_come_from_one_function(self, eorch_home: Path) -> None:
        """Runs are stamped to the second, alerts and their deliveries to the millisecond, by `humanize.iso`."""
        from orchestrator.context import Context
        from orchestrator.core.humanize import iso
        from orchestrator.store.models import Alert

        created = BASE + timedelta(microseconds=123456)
        _add_runs(_failed("dd000001", 0, FINGERPRINT, created_at=created))
        with Context.load().db() as s:
            s.add(Alert(dedup_key="k1", kind="failed", run_id="dd000001", host="local", created_at=created,
                        title="run failed", body="OOM"))
        assert show("dd000001")["created_at"] == iso(created) == "2026-11-20T08:00:00Z"
        alert = json.loads(eorch("alerts", "--json").stdout)[0]
        assert alert["created_at"] == iso(created, "milliseconds") == "2026-11-20T08:00:00.123Z"
