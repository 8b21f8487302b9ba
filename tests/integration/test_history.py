"""Run history through the real CLI on a seeded SQLite history: filters, similar, search, stats, export, prune."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import eorch
from sqlalchemy import select

from orchestrator.core.history import fingerprint_of, normalise_message, parse_since
from orchestrator.store.db import open_store
from orchestrator.store.models import Alert, Event, Host, Run

NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
OOM_TB = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/worker.py", line 120, in load_model\n'
    "    self.model_runner.load_model()\n"
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_runner.py", line {line}, in allocate\n'
    "    buf = torch.empty(n)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib} GiB on device {dev}\n"
)


def oom(gib: str, dev: int, line: int = 88) -> dict:
    return {"exception": "torch.OutOfMemoryError", "process": "Worker_TP0", "signature": "cuda_oom",
            "message": f"CUDA out of memory. Tried to allocate {gib} GiB on device {dev}",
            "traceback": OOM_TB.format(line=line, gib=gib, dev=dev)}


HASH_CAUSE = {"exception": "AssertionError", "process": "EngineCore", "signature": None,
              "message": "block_hashes length 12 does not match num_blocks 13",
              "traceback": 'Traceback (most recent call last):\n  File "/x/kv.py", line 9, in check\n'
                           "AssertionError: block_hashes length 12 does not match num_blocks 13\n"}


def seed(home: Path) -> None:
    maker = open_store(home / "eorch.db")
    with maker.begin() as s:
        s.add(Host(name="gpu", destination="testbox", port=None, root="/r", python="python3", created_at=NOW))
        s.add(Host(name="h200", destination="other", port=None, root="/r", python="python3", created_at=NOW))

        def run(rid: str, name: str, host: str, status: str, age_days: float, cause: dict | None = None,
                model: str = "/models/llama-8b", vllm: str = "0.33.0", env: dict | None = None,
                ran_minutes: float = 30) -> Run:
            created = NOW - timedelta(days=age_days)
            row = Run(id=rid, name=name, host=host, kind="eagle3", command=["vllm", "serve", model], env=env or {},
                      cwd=None, spec=None, model=model, status=status, phase="failed" if cause else "stopped",
                      created_at=created, started_at=created + timedelta(seconds=5),
                      ended_at=created + timedelta(minutes=ran_minutes), exit_code=1 if cause else 0,
                      root_cause=cause, signature=(cause or {}).get("signature"),
                      exception=(cause or {}).get("exception"), fingerprint=fingerprint_of(cause),
                      vllm_version=vllm)
            s.add(row)
            return row

        run("a0000001", "eagle3-llama-1", "gpu", "failed", 20, oom("2.00", 0), vllm="0.32.0",
            env={"HF_TOKEN": "hf_secret1", "VLLM_ATTENTION_BACKEND": "FLASH"})
        run("a0000002", "eagle3-llama-2", "gpu", "succeeded", 10)
        run("a0000003", "eagle3-llama-3", "gpu", "failed", 3, oom("3.50", 1, line=91), ran_minutes=10,
            env={"HF_TOKEN": "hf_secret2", "VLLM_ATTENTION_BACKEND": "TRITON"})
        run("a0000004", "qwen-run", "h200", "failed", 1, HASH_CAUSE, model="/models/qwen-7b", ran_minutes=4)
        run("a0000005", "qwen-ok", "h200", "succeeded", 0.5, model="/models/qwen-7b")
        s.flush()
        s.add(Alert(dedup_key="a0000002:loading_finished", kind="loading_finished", run_id="a0000002", host="gpu",
                    created_at=NOW - timedelta(days=10) + timedelta(minutes=18), title="t", body="b"))
        for i in range(30):
            s.add(Event(run_id="a0000002", ts=NOW - timedelta(days=10), kind="phase_changed", data={"i": i}))
        for i in range(5):
            s.add(Event(run_id="a0000005", ts=NOW - timedelta(hours=1), kind="phase_changed", data={"i": i}))


def ids(args: list[str]) -> list[str]:
    return [r["id"] for r in json.loads(eorch("runs", "--json", *args).stdout)]


@pytest.fixture
def history(eorch_home: Path) -> Path:
    seed(eorch_home)
    return eorch_home


class TestFilters:
    def test_no_filter_lists_newest_first(self, history: Path) -> None:
        """Without filters every run is listed, newest first."""
        assert ids([]) == ["a0000005", "a0000004", "a0000003", "a0000002", "a0000001"]

    @pytest.mark.parametrize("args, expected", [
        (["--status", "failed"], ["a0000004", "a0000003", "a0000001"]),
        (["--host", "h200"], ["a0000005", "a0000004"]),
        (["--since", "7d"], ["a0000005", "a0000004", "a0000003"]),
        (["--name", "eagle3-*"], ["a0000003", "a0000002", "a0000001"]),
        (["--signature", "cuda_oom"], ["a0000003", "a0000001"]),
        (["--exception", "OutOfMemoryError"], ["a0000003", "a0000001"]),
        (["--exception", "AssertionError"], ["a0000004"]),
        (["--model", "/models/qwen-7b"], ["a0000005", "a0000004"]),
        (["--model", "*llama*", "--status", "failed", "--since", "7d"], ["a0000003"]),
    ])
    def test_each_filter_narrows_the_list(self, history: Path, args: list[str], expected: list[str]) -> None:
        """Each filter, alone or combined, keeps exactly the matching runs."""
        assert ids(args) == expected

    def test_table_output_names_the_runs(self, history: Path) -> None:
        """The rich table shows the runs and their failure signatures."""
        out = eorch("runs", "--status", "failed").stdout
        assert "a0000003" in out and "cuda_oom" in out and "a0000002" not in out

    def test_bad_since_is_one_clear_line(self, history: Path) -> None:
        """An unreadable --since is a usage error, not a traceback."""
        proc = eorch("runs", "--since", "yesterday-ish", check=False)
        assert proc.returncode == 2 and "7d" in proc.stderr and "Traceback" not in proc.stderr


class TestSimilar:
    def test_same_bug_with_other_numbers_is_similar(self, history: Path) -> None:
        """Two OOMs differing only in sizes, devices and line numbers share a fingerprint; changes are listed."""
        out = json.loads(eorch("similar", "a0000003", "--json").stdout)
        assert [m["run"]["id"] for m in out["similar"]] == ["a0000001"]
        changes = out["similar"][0]["changes"]
        assert changes["vllm_version"] == {"from": "0.32.0", "to": "0.33.0"}
        assert changes["env"]["VLLM_ATTENTION_BACKEND"] == {"from": "FLASH", "to": "TRITON"}
        assert changes["env"]["HF_TOKEN"] == {"from": "<redacted>", "to": "<redacted>"}
        assert "hf_secret" not in eorch("similar", "a0000003").stdout

    def test_other_failures_are_not_similar(self, history: Path) -> None:
        """A different exception has its own fingerprint and no earlier match."""
        out = json.loads(eorch("similar", "a0000004", "--json").stdout)
        assert out["similar"] == []

    def test_run_without_root_cause_is_a_usage_error(self, history: Path) -> None:
        """A succeeded run has nothing to compare."""
        proc = eorch("similar", "a0000002", check=False)
        assert proc.returncode == 2 and "no root cause" in proc.stderr


class TestSearch:
    def test_search_finds_words_in_messages_and_tracebacks(self, history: Path) -> None:
        """FTS5 finds `block_hashes` in a message and `allocate` (a traceback frame) in the OOM runs."""
        hits = json.loads(eorch("search", "block_hashes", "--json").stdout)
        assert [h["run"]["id"] for h in hits] == ["a0000004"]
        assert "[block_hashes]" in hits[0]["snippet"]
        assert {h["run"]["id"] for h in json.loads(eorch("search", "allocate", "--json").stdout)} == {
            "a0000001", "a0000003"}

    def test_search_text_is_data_not_syntax(self, history: Path) -> None:
        """Quotes and FTS operators in the query do not break it."""
        assert json.loads(eorch("search", 'NOT "OR" -x:y', "--json").stdout) == []

    def test_index_follows_updates_and_deletes(self, history: Path) -> None:
        """The triggers keep the index in step when a root cause changes or a run is deleted."""
        maker = open_store(history / "eorch.db")
        with maker.begin() as s:
            s.get(Run, "a0000004").root_cause = {**HASH_CAUSE, "message": "slot_mapping went negative",
                                                "traceback": "AssertionError: slot_mapping went negative"}
        assert json.loads(eorch("search", "block_hashes", "--json").stdout) == []
        assert len(json.loads(eorch("search", "slot_mapping", "--json").stdout)) == 1
        with maker.begin() as s:
            s.delete(s.get(Run, "a0000004"))
        assert json.loads(eorch("search", "slot_mapping", "--json").stdout) == []


class TestStatsExportPrune:
    def test_stats(self, history: Path) -> None:
        """Counts, success rate, medians and top signatures come out of the seeded history."""
        figures = json.loads(eorch("stats", "--json").stdout)
        assert figures["runs"] == 5 and figures["success_rate"] == 0.4
        assert figures["median_load_s"] == 18 * 60
        assert figures["median_time_to_failure_s"] == pytest.approx(10 * 60 - 5)
        assert figures["top_signatures"] == [{"signature": "cuda_oom", "runs": 2}]
        assert json.loads(eorch("stats", "--host", "h200", "--json").stdout)["runs"] == 2
        assert "success rate" in eorch("stats").stdout

    def test_export_json_lines_and_csv(self, history: Path, tmp_path: Path) -> None:
        """JSON lines carry runs then events; CSV of all writes runs.csv and events.csv."""
        lines = [json.loads(x) for x in eorch("export").stdout.splitlines()]
        assert [x["type"] for x in lines].count("run") == 5 and [x["type"] for x in lines].count("event") == 35
        eorch("export", "--format", "csv", "--out", str(tmp_path / "x"))
        with (tmp_path / "x" / "runs.csv").open() as f:
            assert len(list(csv.DictReader(f))) == 5
        with (tmp_path / "x" / "events.csv").open() as f:
            assert len(list(csv.DictReader(f))) == 35

    def test_prune_asks_then_deletes_old_events_only(self, history: Path) -> None:
        """Declining deletes nothing; confirming deletes events older than the date and keeps every run."""
        declined = eorch("prune", "--before", "2d", input="n\n", check=False)
        assert declined.returncode == 1 and "30 events" in declined.stdout
        eorch("prune", "--before", "2d", input="y\n")
        maker = open_store(history / "eorch.db")
        with maker() as s:
            assert len(list(s.scalars(select(Event)))) == 5
            assert len(list(s.scalars(select(Run)))) == 5


class TestPure:
    def test_normalise_masks_numbers_paths_and_ids(self) -> None:
        """Numbers, paths, hex addresses and long ids are masked."""
        text = normalise_message("failed at /tmp/run-1/x.py 0x7f3a block 12 id deadbeefcafe1234")
        assert text == "failed at <path> <hex> block <n> id <id>"

    def test_since_accepts_durations_and_dates(self) -> None:
        """7d and ISO dates both parse; UTC offsets are applied."""
        now = datetime(2026, 1, 10)
        assert parse_since("7d", now) == datetime(2026, 1, 3)
        assert parse_since("2026-01-01T02:00:00+02:00", now) == datetime(2026, 1, 1)
