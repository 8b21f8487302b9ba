"""`eorch similar`'s "what changed since then": one line a user can read and paste."""

from __future__ import annotations

import shlex

from orchestrator.core.history import describe_changes


def test_commands_are_shown_as_a_shell_would_take_them() -> None:
    before = ["bash", "-c", 'echo hello; python3 -c "raise ValueError(\\"boom\\")"']
    after = ["python3", "-c", "raise ValueError('boom')"]
    line = describe_changes({"command": {"from": before, "to": after}})
    assert line == f"command: {shlex.join(before)} → {shlex.join(after)}"
    left, right = line.removeprefix("command: ").split(" → ")
    assert shlex.split(left) == before and shlex.split(right) == after  # the grouping of arguments survives


def test_values_and_dicts() -> None:
    changes = {"vllm_version": {"from": "0.32.0", "to": "0.33.0"},
               "env": {"VLLM_ATTENTION_BACKEND": {"from": "FLASH", "to": "TRITON"}}}
    assert describe_changes(changes) == "vllm_version: 0.32.0 → 0.33.0; env: VLLM_ATTENTION_BACKEND FLASH→TRITON"
    assert describe_changes({}) == "nothing recorded"
