"""Logs of our own recipe on a real H200 (vLLM 0.26.0, tests/data/gpu/): the parser names what vLLM said.

The expected causes were written down from the logs themselves (tests/data/gpu/README.md), not from the
parser's answers: the message vLLM printed as the reason must be in the root cause.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_path

GPU = Path(__file__).resolve().parents[2] / "data" / "gpu"
EXPECTED = json.loads((GPU / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_root_cause_carries_vllms_message(name: str) -> None:
    expected = EXPECTED[name]
    analysis = analyze_path(GPU / name)
    cause = expected["cause"]
    if cause is None:
        assert analysis.root_cause is None, analysis.root_cause
        assert not analysis.failed
        return
    root = analysis.root_cause
    assert root is not None, f"{name}: no root cause"
    text = f"{root.exception or ''}: {root.message or ''}"
    assert cause["message_contains"] in text, text
    if cause["exception"]:
        assert root.exception == cause["exception"]
