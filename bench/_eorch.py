"""What several benches share: the engine python, the tiny model, eorch's CLI with a wait for an event, and the
P6 sides (a bare ``vllm serve`` prefill, the recipe end to end).  Used by recipe_bench, canary_bench,
retry_bench and bench/gpu/p6.py; none of it is a figure on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.helpers import read_events
from worker.recipes import eagle3_plan as plan
from worker.recipes.proc import Child

OWNED = {"--speculative-config", "--kv-transfer-config"}  # the recipe's; the bare server goes without them


def engine_python() -> str:
    out = subprocess.run([str(REPO / "scripts/engine-venv.sh")], capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python")


def tiny_model(py: str, out: Path, *args: str) -> dict[str, Any]:
    """scripts/make-tiny-model.py into ``out``: its JSON line (``model``, ``prepared``, …)."""
    made = subprocess.run([py, str(REPO / "scripts/make-tiny-model.py"), "--out", str(out), *args],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(made.stdout.strip().splitlines()[-1]))


# -- eorch's CLI -----------------------------------------------------------------------------------
def eorch(env: dict[str, str], *args: str, check: bool = True, timeout: float = 900) -> str:
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise SystemExit(f"eorch {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def spec_toml(py: str, tiny: dict[str, Any], out: Path, extra_args: list[str], name: str = "canary-bench") -> str:
    """The demo spec (make demo's vLLM args) for the tiny model, ``extra_args`` appended to vllm_args."""
    args = ["--enforce-eager", "--dtype", "bfloat16", *extra_args]
    return "\n".join([
        'kind = "eagle3-extract"', f"name = {json.dumps(name)}", "[eagle3]",
        f"model = {json.dumps(tiny['model'])}", f"data = {json.dumps(tiny['prepared'])}",
        f"output = {json.dumps(str(out))}", "max_model_len = 512", "concurrency = 4", "port = 0",
        f"vllm_python = {json.dumps(py)}", f"speculators_python = {json.dumps(py)}",
        f"vllm_args = {json.dumps(args)}", "health_timeout_s = 600", "stop_grace_s = 20",
        "[eagle3.env]", 'HF_HUB_OFFLINE = "1"', 'VLLM_CPU_KVCACHE_SPACE = "1"', ""])


def wait(pred: Any, timeout: float, what: str, poll: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(poll)
    raise SystemExit(f"timed out waiting for {what}")


def wait_event(events: Path, pred: Any, timeout: float) -> dict[str, Any]:
    """The first event of the run's ``events.jsonl`` that ``pred`` accepts (SystemExit after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in read_events(events):
            if pred(e):
                return e
        time.sleep(0.05)
    raise SystemExit(f"no such event in {events} after {timeout}s")


def launch(env: dict[str, str], spec: Path, *flags: str) -> tuple[dict[str, Any], Path]:
    """``eorch launch --host local --spec SPEC --json FLAGS``: the run's JSON and its events.jsonl."""
    run = json.loads(eorch(env, "launch", "--host", "local", "--spec", str(spec), "--json", *flags))
    return run, Path(run["remote_dir"]) / "events.jsonl"


def steps(path: Path) -> dict[str, float]:
    return {e["step"]: e["detail"]["seconds"] for e in read_events(path)
            if e["kind"] == "step" and e["state"] == "done"}


# -- the two sides of P6 ---------------------------------------------------------------------------
def dataset_ids(py: str, data: str, n: int) -> list[list[int]]:
    code = ("import json,sys; from datasets import load_from_disk; d=load_from_disk(sys.argv[1]); "
            "print(json.dumps([d[i]['input_ids'].tolist() for i in range(min(len(d), int(sys.argv[2])))]))")
    out = subprocess.run([py, "-c", code, data, str(n)], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def post(url: str, body: dict[str, Any]) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return bytes(resp.read())


def wait_healthy(port: int, child: Child, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"{child.name} server exited; see its log")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)  # the recipe's health poll interval too
    raise RuntimeError(f"{child.name} server not healthy")


def prefill(port: int, model: str, prompts: list[list[int]], concurrency: int) -> None:
    """Every prompt once as ``/v1/completions`` with ``max_tokens=1``, ``concurrency`` at a time."""
    url = f"http://127.0.0.1:{port}/v1/completions"
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda ids: post(url, {"model": model, "prompt": ids, "max_tokens": 1}), prompts))


def baseline(cfg: dict[str, Any], prompts: list[list[int]], work: Path, backend: str = "file-cpu") -> dict[str, float]:
    """The recipe's ``vllm serve`` argv without the extraction configs, then a prefill of every prompt."""
    p = plan.serve_plan(cfg, cfg["model"], [0], backend, str(work), dict(os.environ), "bench-baseline")
    argv, skip = [], False
    for arg in p.argv:
        if skip:
            skip = False
        elif arg in OWNED:
            skip = True
        else:
            argv.append(arg)
    t0 = time.monotonic()
    child = Child("baseline", argv, p.env, work / "baseline-vllm.log", prefix=b"[baseline] ")
    try:
        wait_healthy(cfg["port"], child)
        t1 = time.monotonic()
        prefill(cfg["port"], cfg["model"], prompts, cfg["concurrency"])
        t2 = time.monotonic()
    finally:
        child.stop(20)
    t3 = time.monotonic()
    return {"wall_s": t3 - t0, "start_s": t1 - t0, "data_s": t2 - t1, "stop_s": t3 - t2,
            "samples_per_s": len(prompts) / (t2 - t1)}


def recipe(cfg: dict[str, Any], work: Path, name: str) -> dict[str, Any]:
    """``python3 -m worker.recipes.eagle3`` end to end in ``work/name``: wall time and the steps' seconds."""
    run_dir = work / name
    run_dir.mkdir(parents=True)
    (run_dir / "spec.json").write_text(json.dumps({"kind": "eagle3-extract", "eagle3": cfg}))
    env = {**os.environ, "EORCH_RUN_DIR": str(run_dir), "EORCH_RUN_ID": "bench", "PYTHONPATH": str(REPO)}
    t0 = time.monotonic()
    with open(run_dir / "log", "wb") as log:
        rc = subprocess.run([sys.executable, "-m", "worker.recipes.eagle3", str(run_dir / "spec.json")],
                            stdout=log, stderr=subprocess.STDOUT, env=env, check=False).returncode
    wall = time.monotonic() - t0
    if rc != 0:
        raise RuntimeError(f"recipe exited {rc}; see {run_dir / 'log'}")
    done = {e["step"]: e["detail"] for e in read_events(run_dir / "events.jsonl")
            if e["kind"] == "step" and e["state"] == "done"}
    extract_s = float(done["extract"]["seconds"])
    return {"wall_s": wall, "data_s": extract_s, "samples_per_s": done["extract"]["new"] / extract_s,
            "steps_s": {k: v["seconds"] for k, v in done.items()}}
