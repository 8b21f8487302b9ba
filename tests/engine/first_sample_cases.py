"""Run with the engine venv's python: ``first_sample.check`` on real safetensors files, one good and one per
breakage the gate exists for.  Prints one JSON object: case → the check's result."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from worker.recipes.first_sample import check

IDS = list(range(1, 58))


def main() -> None:
    good = torch.randn(len(IDS), 4, 256).to(torch.bfloat16)
    nan = good.clone()
    nan[3, 1, 7] = float("nan")
    cases = {
        "good": {"hidden_states": good, "token_ids": torch.tensor(IDS)},
        "short_prefix_cached": {"hidden_states": good[16:], "token_ids": torch.tensor(IDS)},
        "last_layer_dropped": {"hidden_states": good[:, :3], "token_ids": torch.tensor(IDS)},
        "nan": {"hidden_states": nan, "token_ids": torch.tensor(IDS)},
        "token_ids_differ": {"hidden_states": good, "token_ids": torch.tensor([9, *IDS[1:]])},
        "wrong_dtype": {"hidden_states": good.to(torch.float16), "token_ids": torch.tensor(IDS)},
        "no_token_ids": {"hidden_states": good},
    }
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tensors in cases.items():
            path = Path(tmp) / f"{name}.safetensors"
            save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))
            out[name] = check(path, IDS, layers=4, hidden=256, dtype="bfloat16")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
