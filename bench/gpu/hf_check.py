"""Check saved hidden states against a float32 transformers forward pass (the GPU scenarios' output check).

    python3 bench/gpu/hf_check.py MODEL DATA OUT --layers 2,3,6 [--samples 24] [--min-cos 0.999]

Per sample ``OUT/hs_{i}.safetensors``: ``hidden_states`` of shape ``[T, len(layers), hidden]`` with T the
sample's token count, ``token_ids`` equal to the dataset's ``input_ids``, finite values, and per layer id k the
cosine of every token's vector against transformers' ``hidden_states[k]`` (the input of decoder layer k; k = n
is the final pre-norm output, from a hook on ``model.norm``), as tests/engine/hf_compare.py does on CPU.  fp8
files (hs-connectors: ``hidden_states`` float8_e4m3fn + per-token ``hidden_states_scales``) are dequantised.
Prints one JSON object; exit 0 only when every check passes and every minimum cosine is ≥ ``--min-cos``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from datasets import load_from_disk
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM


def hidden(saved: dict[str, torch.Tensor]) -> torch.Tensor:
    hs = saved["hidden_states"]
    scales = saved.get("hidden_states_scales")
    return hs.float() * scales.float() if scales is not None else hs.float()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("out", type=Path)
    p.add_argument("--layers", required=True)
    p.add_argument("--samples", type=int, default=24)
    p.add_argument("--min-cos", type=float, default=0.999)
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    ids_wanted = [int(x) for x in a.layers.split(",")]
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).to(a.device).eval()
    n = model.config.num_hidden_layers
    captured: dict[str, torch.Tensor] = {}
    model.model.norm.register_forward_hook(lambda m, args, out: captured.__setitem__("pre_norm", args[0]))
    ds = load_from_disk(a.data)
    worst = {k: 1.0 for k in ids_wanted}
    problems: list[str] = []
    dtype, checked, tokens = None, 0, 0
    for i in range(min(a.samples, len(ds))):
        path = a.out / f"hs_{i}.safetensors"
        if not path.exists():
            problems.append(f"{path.name} missing")
            continue
        ids = ds[i]["input_ids"].tolist()
        saved = load_file(str(path))
        dtype = str(saved["hidden_states"].dtype)
        got_all = hidden(saved)
        if list(got_all.shape[:2]) != [len(ids), len(ids_wanted)]:
            problems.append(f"{path.name}: shape {list(got_all.shape)}, want [{len(ids)}, {len(ids_wanted)}, H]")
            continue
        if saved["token_ids"].tolist() != ids:
            problems.append(f"{path.name}: token_ids differ from the dataset's input_ids")
        if not torch.isfinite(got_all).all():
            problems.append(f"{path.name}: non-finite values")
        with torch.no_grad():
            hf = model(torch.tensor([ids], device=a.device), output_hidden_states=True).hidden_states
        for j, k in enumerate(ids_wanted):
            ref = (captured["pre_norm"][0] if k == n else hf[k][0]).float().cpu()
            cos = torch.nn.functional.cosine_similarity(got_all[:, j], ref, dim=-1).min().item()
            worst[k] = min(worst[k], round(cos, 6))
        checked += 1
        tokens += len(ids)
    ok = not problems and checked > 0 and all(v >= a.min_cos for v in worst.values())
    print(json.dumps({"ok": ok, "samples_checked": checked, "tokens": tokens, "dtype": dtype,
                      "layers": ids_wanted, "num_hidden_layers": n, "min_cos": worst, "min_cos_goal": a.min_cos,
                      "problems": problems[:20]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
