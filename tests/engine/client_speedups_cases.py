"""Run with the engine python by test_client_speedups.py: openai's request transform of speculators' bodies, as
released and with worker/recipes/client_speedups.py installed.  Prints one JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from openai._utils import _transform as t
from openai.types import completion_create_params as cp
from openai.types.chat import completion_create_params as chat

PROMPT = [(i * 7919) % 32000 for i in range(800)]
BODIES: dict[str, tuple[dict[str, Any], Any]] = {
    # what speculators generate-offline-data sends (vllm_client.generate_hidden_states_async)
    "token_ids": ({"model": "m", "prompt": PROMPT, "max_tokens": 1, "extra_body": {"return_token_ids": True}},
                  cp.CompletionCreateParamsNonStreaming),
    "batch_of_token_ids": ({"model": "m", "prompt": [PROMPT[:5], PROMPT[5:9]], "max_tokens": 1},
                           cp.CompletionCreateParamsNonStreaming),
    "strings": ({"model": "m", "prompt": ["a", "b"], "max_tokens": 1, "stop": ["x"]},
                cp.CompletionCreateParamsNonStreaming),
    "bools_are_not_ints": ({"model": "m", "prompt": [True, 2], "max_tokens": 1}, cp.CompletionCreateParamsNonStreaming),
    "chat": ({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
              "logit_bias": {"5": 1}}, chat.CompletionCreateParamsNonStreaming),
}


async def transformed() -> dict[str, Any]:
    calls = {"n": 0}
    inner = t._async_transform_recursive

    async def counting(data: object, *, annotation: Any, inner_type: Any = None) -> object:
        calls["n"] += 1
        return await inner(data, annotation=annotation, inner_type=inner_type)

    t._async_transform_recursive = counting  # counts the recursion of the (stock or wrapped) transform
    out: dict[str, Any] = {}
    for name, (body, params) in BODIES.items():
        calls["n"] = 0
        async_body = await t.async_maybe_transform(body, params)
        out[name] = {"async": async_body, "sync": t.maybe_transform(body, params), "calls": calls["n"]}
    t._async_transform_recursive = inner
    return out


stock = asyncio.run(transformed())
import worker.recipes.client_speedups as speedups

fast = asyncio.run(transformed())
print(json.dumps({"installed": speedups.install(), "stock": stock, "fast": fast}))
