"""Job specs: validation messages name the key; defaults; the worker payload."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.core.spec import CommandJob, Eagle3Job, load_spec, parse_spec, worker_payload
from orchestrator.errors import SpecError

REPO = Path(__file__).resolve().parents[2]
BASE = {"model": "/m", "data": "/d", "output": "/o"}


def _e3(**over: object) -> dict[str, object]:
    return {"kind": "eagle3-extract", "eagle3": {**BASE, **over}}


class TestValidSpecs:
    """Specs that validate, and what they hold."""

    def test_eagle3_defaults(self) -> None:
        spec = parse_spec(_e3())
        assert isinstance(spec, Eagle3Job)
        e = spec.eagle3
        assert (e.tensor_parallel_size, e.hs_backend, e.serve_entrypoint, e.layer_ids) == (1, "auto", "api_server", None)

    def test_command(self) -> None:
        spec = parse_spec({"kind": "command", "command": {"argv": ["echo", "hi"]}})
        assert isinstance(spec, CommandJob) and spec.command.argv == ["echo", "hi"]

    @pytest.mark.parametrize("name", ["demo-tiny-llama.toml", "command.toml", "eagle3-gpu.toml"])
    def test_examples_load(self, name: str) -> None:
        load_spec(REPO / "deploy" / "examples" / name)

    def test_payload_is_json_and_round_trips(self) -> None:
        spec = parse_spec(_e3(layer_ids=[2, 4, 5, 8], env={"A": "1"}))
        payload = worker_payload(spec)
        assert payload["kind"] == "eagle3-extract" and payload["eagle3"]["layer_ids"] == [2, 4, 5, 8]
        assert parse_spec(payload) == spec


class TestErrors:
    """Each bad spec raises SpecError with one line naming the file and key."""

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (_e3(tensor_parallel_size=0), "spec job.toml: eagle3.tensor_parallel_size: must be ≥ 1"),
            (_e3(bogus=1), "spec job.toml: eagle3.bogus: unknown key"),
            ({"kind": "eagle3-extract", "eagle3": BASE, "extra": 1}, "spec job.toml: extra: unknown key"),
            ({"kind": "nope"}, "spec job.toml: kind: must be one of 'command', 'eagle3-extract'"),
            ({}, "spec job.toml: kind: must be one of 'command', 'eagle3-extract'"),
            ({"kind": "eagle3-extract", "eagle3": {"model": "/m", "data": "/d"}},
             "spec job.toml: eagle3.output: required key is missing"),
            (_e3(gpu_memory_utilization=1.5), "spec job.toml: eagle3.gpu_memory_utilization: must be ≤ 1.0"),
            (_e3(port=70000), "spec job.toml: eagle3.port: must be ≤ 65535"),
            (_e3(hs_backend="disk"), "spec job.toml: eagle3.hs_backend: must be one of"),
            (_e3(layer_ids=[]), "spec job.toml: eagle3.layer_ids: must not be empty"),
            (_e3(layer_ids=[4, 2]), "spec job.toml: eagle3.layer_ids: must be in increasing order"),
            (_e3(layer_ids=[2, -1]), "spec job.toml: eagle3.layer_ids.1: must be ≥ 0"),
            (_e3(layer_ids=[2], legacy_output_ids=[1]), "spec job.toml: eagle3: give layer_ids or legacy_output_ids"),
            (_e3(vllm_args=["--port=9"]), "spec job.toml: eagle3.vllm_args: --port is set by the recipe"),
            (_e3(serve_entrypoint="vllm"), "spec job.toml: eagle3.serve_entrypoint: must be one of"),
            (_e3(world_size=2, rank=2), "spec job.toml: eagle3: rank 2 must be < world_size 2"),
            (_e3(world_size=0), "spec job.toml: eagle3.world_size: must be ≥ 1"),
            ({"kind": "command", "command": {"argv": []}}, "spec job.toml: command.argv: must not be empty"),
            ({"kind": "command", "command": {"argv": ["  "]}}, "spec job.toml: command.argv: must not be empty"),
        ],
    )
    def test_message_names_key(self, data: dict[str, object], message: str) -> None:
        with pytest.raises(SpecError) as info:
            parse_spec(data, source="job.toml")
        assert str(info.value).startswith(message)
        assert "\n" not in str(info.value)

    def test_bad_toml(self, tmp_path: Path) -> None:
        path = tmp_path / "job.toml"
        path.write_text("kind = \n")
        with pytest.raises(SpecError, match=r"^spec job.toml: not valid TOML"):
            load_spec(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(SpecError, match="file not found"):
            load_spec(tmp_path / "nope.toml")


class TestOverrides:
    """`eorch launch --spec S --set KEY.PATH=VALUE`: TOML values set into the spec, then validated."""

    def _spec(self, tmp_path: Path) -> Path:
        path = tmp_path / "job.toml"
        path.write_text('kind = "eagle3-extract"\n[eagle3]\nmodel = "/m"\ndata = "/d"\noutput = "/o"\n')
        return path

    def test_values_are_toml_or_strings(self, tmp_path: Path) -> None:
        spec = load_spec(self._spec(tmp_path), ["eagle3.port=0", "eagle3.trust_remote_code=true",
                                                 'eagle3.vllm_args=["--enforce-eager"]', "eagle3.output=/x/y",
                                                 "name=split", "eagle3.env.A=1 2"])
        assert isinstance(spec, Eagle3Job)
        e = spec.eagle3
        assert (e.port, e.trust_remote_code, e.vllm_args, e.output, spec.name) == (0, True, ["--enforce-eager"],
                                                                                  "/x/y", "split")
        assert e.env == {"A": "1 2"}

    @pytest.mark.parametrize(("item", "message"), [
        ("eagle3.bogus=1", "spec job.toml: eagle3.bogus: unknown key"),
        ("eagle3.port=-1", "spec job.toml: eagle3.port: must be ≥ 0"),
        ("eagle3.rank=1", "spec job.toml: eagle3: rank 1 must be < world_size 1"),
        ("eagle3.port", "--set 'eagle3.port': expected KEY=VALUE"),
        ("eagle3..port=1", "--set 'eagle3..port=1': expected KEY=VALUE"),
        ("eagle3.model.x=1", "--set eagle3.model.x: model is a value, not a table"),
    ])
    def test_bad_override_names_it(self, tmp_path: Path, item: str, message: str) -> None:
        with pytest.raises(SpecError) as info:
            load_spec(self._spec(tmp_path), [item])
        assert str(info.value).startswith(message)
