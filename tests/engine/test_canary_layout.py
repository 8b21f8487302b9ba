"""The canary checkpoint's tensors are the ones transformers' own model of each family has (engine venv)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_layout_matches_transformers_for_every_family(engine_python: Path) -> None:
    """Llama-3, Qwen3, Qwen3-MoE, DeepSeek-V3, Kimi-K2 shrunk: same names and shapes, none missing or extra."""
    out = subprocess.run([str(engine_python), str(REPO / "tests/engine/check_canary_layout.py")],
                         capture_output=True, text=True, timeout=600, check=True)
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert sorted(r["name"] for r in results) == ["deepseek-v3", "kimi-k2-instruct", "llama-3.1-8b-instruct",
                                                  "qwen3-30b-a3b", "qwen3-8b"]
    for r in results:
        assert r["missing"] == [] and r["extra"] == [] and r["mismatched"] == [], r
