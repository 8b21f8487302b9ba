"""worker/recipes/client_speedups.py against the real openai client of the engine env: the request bodies
speculators sends are the same, built without openai's per-token transform walk (P6, issue 17)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from worker.recipes import eagle3

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cases(engine_python: Path) -> dict[str, Any]:
    out = subprocess.run([str(engine_python), str(REPO / "tests/engine/client_speedups_cases.py")],
                         capture_output=True, text=True, timeout=600, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_every_body_is_transformed_as_released(cases: dict[str, Any]) -> None:
    assert cases["installed"] is True
    for name, stock in cases["stock"].items():
        fast = cases["fast"][name]
        assert (fast["async"], fast["sync"]) == (stock["async"], stock["sync"]), name


def test_a_token_id_prompt_skips_the_walk(cases: dict[str, Any]) -> None:
    """As released, openai walks the 800 token ids once per member of prompt's Union type; installed, the
    prompt list is taken as it is."""
    assert cases["stock"]["token_ids"]["calls"] > 800
    assert cases["fast"]["token_ids"]["calls"] < 20
    assert cases["fast"]["bools_are_not_ints"]["calls"] == cases["stock"]["bools_are_not_ints"]["calls"]


def test_the_recipes_warm_python_installs_it_before_the_speculators_client() -> None:
    modules = eagle3._WARM_MODULES
    assert modules.index("worker.recipes.client_speedups") < modules.index("speculators.cli")
