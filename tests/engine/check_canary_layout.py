"""Run with the engine venv's python: the canary's tensor layout of each config in tests/data/configs against
the model transformers builds from the same shrunken config (on the meta device: no memory).  transformers 5
holds MoE experts fused (``experts.gate_up_proj [E, 2I, H]``, ``experts.down_proj [E, H, I]``) where the
checkpoints (and vLLM's loaders) have one tensor per expert: those are compared after unfusing.  Prints one
JSON object per config: {"name", "missing", "extra", "mismatched"}."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from worker.recipes import shrink


def unfused(hf: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in hf.items():
        if name.endswith("experts.gate_up_proj"):
            e, two_i, h = shape
            for k in range(e):
                out[f"{name[:-len('gate_up_proj')]}{k}.gate_proj.weight"] = (two_i // 2, h)
                out[f"{name[:-len('gate_up_proj')]}{k}.up_proj.weight"] = (two_i // 2, h)
        elif name.endswith("experts.down_proj"):
            e, h, i = shape
            for k in range(e):
                out[f"{name[:-len('down_proj')]}{k}.down_proj.weight"] = (h, i)
        else:
            out[name] = shape
    return out


def main() -> None:
    for path in sorted((REPO / "tests" / "data" / "configs").glob("*.json")):
        target = json.loads(path.read_text())
        small = shrink.shrink(target, 4)
        hf_dict = {k: v for k, v in small.items() if k != "auto_map"}
        if hf_dict["model_type"] == "kimi_k2":  # Kimi-K2 is DeepSeek-V3's architecture under its own name
            hf_dict["model_type"] = "deepseek_v3"
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**hf_dict))
        want = unfused({k: tuple(v.shape) for k, v in model.state_dict().items()})
        got = {name: shape for name, shape, _ in shrink.weight_layout(small)}
        print(json.dumps({"name": path.stem, "missing": sorted(set(want) - set(got)),
                          "extra": sorted(set(got) - set(want)),
                          "mismatched": sorted(k for k in set(want) & set(got) if want[k] != got[k])}))


if __name__ == "__main__":
    main()
