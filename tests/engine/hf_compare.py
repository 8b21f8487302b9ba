"""Compare saved hidden states with a float32 transformers forward pass (run with the engine venv python).

    python tests/engine/hf_compare.py MODEL DATA OUT --layers 2,4,5,8 [--samples 6]

Prints JSON ``{"min_cos": {layer_id: float}, "samples": n}``.  Layer id k < n is HF ``hidden_states[k]`` (the
input of decoder layer k); k = n is the final pre-norm output, captured with a hook on ``model.norm``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from datasets import load_from_disk
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("out", type=Path)
    p.add_argument("--layers", required=True)
    p.add_argument("--samples", type=int, default=6)
    a = p.parse_args()
    ids_wanted = [int(x) for x in a.layers.split(",")]
    model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32).eval()
    n = model.config.num_hidden_layers
    captured: dict[str, torch.Tensor] = {}
    model.model.norm.register_forward_hook(lambda m, args, out: captured.__setitem__("pre_norm", args[0]))
    ds = load_from_disk(a.data)
    worst = {k: 1.0 for k in ids_wanted}
    shifted = {k: -1.0 for k in ids_wanted if k < n}  # best cosine against the *next* layer's input
    for i in range(min(a.samples, len(ds))):
        ids = ds[i]["input_ids"].tolist()
        saved = load_file(str(a.out / f"hs_{i}.safetensors"))
        with torch.no_grad():
            hf = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        for j, k in enumerate(ids_wanted):
            ref = captured["pre_norm"][0] if k == n else hf[k][0]
            got = saved["hidden_states"][:, j].float()
            cos = torch.nn.functional.cosine_similarity(got, ref, dim=-1).min().item()
            worst[k] = min(worst[k], cos)
            if k < n:
                ref_next = captured["pre_norm"][0] if k + 1 == n else hf[k + 1][0]
                off = torch.nn.functional.cosine_similarity(got, ref_next, dim=-1).mean().item()
                shifted[k] = max(shifted[k], off)
    print(json.dumps({"min_cos": worst, "mean_cos_next_layer": shifted, "samples": min(a.samples, len(ds))}))


if __name__ == "__main__":
    main()
