"""Figure: the openai client's request transform of speculators' extraction requests, as released vs with
worker/recipes/client_speedups.py (P6, issue 17), on 1500 P6-like bodies (token-id prompts of 256–1024).

    "$(bash scripts/engine-venv.sh)/bin/python" bench/client_transform_bench.py [--out FILE.json]

Run with the engine python (openai is the speculators env's).  The transform runs in the speculators client's
one event loop, once per sample, before the request is sent: its seconds are the client's CPU per dataset.
Checks that both build the same bodies.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openai._utils import _transform as t
from openai.types import completion_create_params as cp


def bodies(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"model": "m", "prompt": [rng.randrange(32000) for _ in range(rng.randint(256, 1024))],
             "max_tokens": 1, "extra_body": {"return_token_ids": True}} for _ in range(n)]


async def transform_all(items: list[dict[str, Any]]) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    out = [await t.async_maybe_transform(b, cp.CompletionCreateParamsNonStreaming) for b in items]
    return time.perf_counter() - t0, out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=1500)
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    items = bodies(a.samples)
    stock_s, stock = asyncio.run(transform_all(items))
    import worker.recipes.client_speedups  # noqa: F401  (installs itself, as in the recipe's warm python)

    fast_s, fast = asyncio.run(transform_all(items))
    report = {"bench": "client_transform", "samples": a.samples, "tokens": sum(len(b["prompt"]) for b in items),
              "stock_s": round(stock_s, 3), "fast_s": round(fast_s, 3), "same_bodies": stock == fast,
              "stock_ms_per_sample": round(1000 * stock_s / a.samples, 3),
              "fast_ms_per_sample": round(1000 * fast_s / a.samples, 3),
              "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0 if report["same_bodies"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
