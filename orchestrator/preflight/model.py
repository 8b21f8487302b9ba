"""Checks of the spec against the model's config.json: layer ids, max_model_len, tensor parallel heads."""

from __future__ import annotations

from typing import Any

from orchestrator.preflight.report import Check, fail, ok, warn

# vLLM's _get_and_verify_max_len: the smallest of these in the (text) config bounds max_model_len.
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_sequence_length", "max_seq_length", "seq_len")
NO_SCALING_ROPE = ("su", "longrope", "llama3")  # rope types vLLM does not multiply max length by


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config (``text_config``/``language_config`` of multimodal wrappers over the top)."""
    inner = config.get("text_config") or config.get("language_config") or {}
    return {**config, **inner} if isinstance(inner, dict) else config


def families(config: dict[str, Any]) -> list[str]:
    names = [config.get("model_type"), *(config.get("architectures") or [])]
    inner = config.get("text_config") or config.get("language_config")
    if isinstance(inner, dict):
        names += [inner.get("model_type"), *(inner.get("architectures") or [])]
    return [str(n).lower() for n in names if n]


def layer_ids(cfg: dict[str, Any], n: int | None) -> tuple[list[int] | None, str]:
    """The ids the recipe will use (as eagle3_plan.resolve_layer_ids) and where they come from."""
    if cfg.get("layer_ids") is not None:
        return list(cfg["layer_ids"]), "spec layer_ids"
    if cfg.get("legacy_output_ids") is not None:
        return [i + 1 for i in cfg["legacy_output_ids"]], "legacy_output_ids + 1"
    if n is None:
        return None, "default"
    return sorted({2, n // 2, n - 3, n}), f"default [2, n//2, n-3, n] with n={n}"


def check_layer_ids(cfg: dict[str, Any], tc: dict[str, Any]) -> Check:
    n = tc.get("num_hidden_layers")
    if not isinstance(n, int) or n <= 0:
        return fail("layer_ids", "config.json has no num_hidden_layers (nor text_config.num_hidden_layers)",
                    "check that model points at a Hugging Face model directory")
    ids, source = layer_ids(cfg, n)
    assert ids is not None
    bad = [i for i in ids if i > n]
    if bad:
        return fail("layer_ids", f"layer id {bad[0]} > num_hidden_layers {n} (ids {ids}, {source})",
                    f"use ids in 0..{n} ({n} = the final pre-norm output), or leave layer_ids out for "
                    "[2, n//2, n-3, n]")
    return ok("layer_ids", f"ids {ids} ≤ num_hidden_layers {n} ({source})")


def derived_max_len(tc: dict[str, Any]) -> tuple[int | None, str]:
    found = {k: tc[k] for k in LENGTH_KEYS if isinstance(tc.get(k), int) and tc[k] > 0}
    if not found:
        return None, "no length key in config.json"
    key = min(found, key=lambda k: found[k])
    limit, why = found[key], f"{key}={found[key]}"
    rope = tc.get("rope_scaling") or tc.get("rope_parameters") or {}
    if isinstance(rope, dict):
        kind = rope.get("rope_type") or rope.get("type")
        factor = rope.get("factor")
        if isinstance(factor, (int, float)) and factor > 1 and kind not in NO_SCALING_ROPE:
            base = rope.get("original_max_position_embeddings") if kind == "yarn" else None
            limit = int((base if isinstance(base, int) else limit) * factor)
            why += f" × rope {kind} factor {factor}"
    return limit, why


def check_max_model_len(cfg: dict[str, Any], tc: dict[str, Any], dataset: dict[str, Any]) -> Check:
    mml = int(cfg["max_model_len"])
    limit, why = derived_max_len(tc)
    if limit is not None and mml > limit:
        todo = f"set max_model_len ≤ {limit}"
        if (cfg.get("env") or {}).get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1":
            return warn("max_model_len", f"max_model_len {mml} > the model's {limit} ({why}); "
                        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets vLLM accept it", todo + " unless you mean it")
        return fail("max_model_len", f"max_model_len {mml} > the model's limit {limit} ({why}): vLLM refuses "
                    "it after start-up", todo)
    longest, what = None, ""
    if dataset.get("kind") == "prepared" and isinstance(dataset.get("max_tokens"), int):
        longest, what = dataset["max_tokens"], "longest sample of this run's share"
    elif dataset.get("kind") == "raw":
        longest = int(cfg.get("seq_length") or mml - 1)
        what = "seq_length (prepare-data truncates to it)"
    if longest is not None and longest + 1 > mml:
        return fail("max_model_len", f"{what}: {longest} tokens; max_model_len {mml} must be ≥ {longest + 1} "
                    "(max_tokens=1 needs one slot): vLLM answers HTTP 400 for each longer sample",
                    f"set max_model_len ≥ {longest + 1}" + (f" (≤ {limit})" if limit else "")
                    + " or prepare the data with a smaller --seq-length")
    tail = f"; {what} {longest} + 1 ≤ {mml}" if longest is not None else ""
    return ok("max_model_len", f"max_model_len {mml} ≤ {limit} ({why}){tail}" if limit
              else f"max_model_len {mml} ({why}){tail}")


def check_tp_heads(cfg: dict[str, Any], tc: dict[str, Any]) -> Check:
    tp = int(cfg["tensor_parallel_size"])
    heads = tc.get("num_attention_heads")
    if not isinstance(heads, int):
        return warn("tp_heads", "config.json has no num_attention_heads", "check tensor_parallel_size by hand")
    if heads % tp:
        divisors = [d for d in range(1, heads + 1) if heads % d == 0 and d <= 16]
        return fail("tp_heads", f"tensor_parallel_size {tp} does not divide num_attention_heads {heads}",
                    f"use a tensor_parallel_size that divides {heads}: {', '.join(map(str, divisors))}")
    return ok("tp_heads", f"tensor_parallel_size {tp} divides num_attention_heads {heads}")
