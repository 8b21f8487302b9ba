"""convert_legacy: old data_{i}.pt → hs_{i}.safetensors with ids relabelled +1 (engine venv python)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.engine.conftest import REPO

pytestmark = pytest.mark.e2e

MAKE_OLD = """
import sys, torch
torch.manual_seed(0)
for i in range(3):
    T = 10 + i
    torch.save({"input_ids": torch.arange(T), "hidden_states": [torch.randn(T, 64) for _ in range(4)],
                "loss_mask": torch.ones(T, dtype=torch.long)}, f"{sys.argv[1]}/data_{i}.pt")
"""

CHECK = """
import sys, torch
from safetensors.torch import load_file
for i in range(3):
    old, new = torch.load(f"{sys.argv[1]}/data_{i}.pt"), load_file(f"{sys.argv[2]}/hs_{i}.safetensors")
    assert new["hidden_states"].shape == (10 + i, 4, 64), new["hidden_states"].shape
    assert torch.equal(new["token_ids"], old["input_ids"])
    for j in range(4):
        assert torch.equal(new["hidden_states"][:, j], old["hidden_states"][j])
print("ok")
"""


def test_convert(engine_python: Path, tmp_path: Path) -> None:
    src, out = tmp_path / "old", tmp_path / "new"
    src.mkdir()
    subprocess.run([str(engine_python), "-c", MAKE_OLD, str(src)], check=True)
    res = subprocess.run([str(engine_python), "-m", "worker.convert_legacy", str(src), "--out", str(out),
                          "--legacy-layer-ids", "2,4,5,7"], capture_output=True, text=True, cwd=REPO, check=True)
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["ok"] and summary["converted"] == 3 and summary["layer_ids"] == [3, 5, 6, 8]
    assert "relabelled +1" in res.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["legacy_output_ids"] == [2, 4, 5, 7] and manifest["layer_ids"] == [3, 5, 6, 8]
    check = subprocess.run([str(engine_python), "-c", CHECK, str(src), str(out)], capture_output=True, text=True, check=False)
    assert check.stdout.strip() == "ok", check.stderr
    again = subprocess.run([str(engine_python), "-m", "worker.convert_legacy", str(src), "--out", str(out)],
                           capture_output=True, text=True, cwd=REPO, check=True)
    rerun = json.loads(again.stdout.strip().splitlines()[-1])
    assert rerun["skipped_existing"] == 3 and rerun["layer_ids"] == [3, 5, 6, 8]
