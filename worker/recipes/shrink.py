"""A model's config.json shrunk to a canary of the same architecture, and the tensors such a checkpoint holds.

Pure and stdlib only (it runs on the host with the recipe's python3).  The canary keeps what selects the code
path — ``architectures``, ``model_type``, ``auto_map``, vocabulary, dtype, rope, ``max_position_embeddings``,
tied embeddings — and cuts what only costs memory and time: layers (the spec's layer ids remapped, the last
one kept last), widths, experts, ranks.  Families:

- dense (Llama, Qwen3): 64-wide heads (the CPU attention backend and every GPU one support 64), GQA kept;
- Qwen3-MoE: 8 experts, top-2, every layer sparse (unless the target has none);
- DeepSeek-V3 / Kimi-K2 (MLA + MoE): the MLA head dims are kept (kv_lora_rank 512, rope 64, nope 128, v 128:
  the MLA kernels are built for them), q_lora_rank, experts and groups cut, one dense layer kept in front when
  the target has dense layers.

A checkpoint's ``quantization_config`` is dropped: the canary runs unquantised kernels on bf16 weights (it
tests the recipe, the engine, the patches and the layer-id plumbing, not the quantised GEMMs).
"""

from __future__ import annotations

import copy
from typing import Any

DENSE = ("LlamaForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM")
QWEN3_MOE = ("Qwen3MoeForCausalLM",)
DEEPSEEK = ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM")
HEAD_DIM = 64
MLA_KEPT = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


class ShrinkError(ValueError):
    """The target's config cannot be shrunk into a canary (unsupported architecture, missing key)."""


def family(cfg: dict[str, Any]) -> str:
    arch = (cfg.get("architectures") or [None])[0]
    if arch in DENSE:
        return "dense"
    if arch in QWEN3_MOE:
        return "qwen3_moe"
    if arch in DEEPSEEK:
        return "deepseek"
    supported = ", ".join((*DENSE, *QWEN3_MOE, *DEEPSEEK))
    raise ShrinkError(f"no canary for architecture {arch!r} (supported: {supported}); "
                      "launch with --no-canary to skip it")


def remap_layer_ids(ids: list[int], n: int, m: int) -> list[int]:
    """The spec's ids (of an ``n``-layer target) on an ``m``-layer canary: proportional, strictly increasing,
    id ``n`` (the final pre-norm output) stays ``m``, every other id stays below ``m``."""
    last = [i for i in ids if i == n]
    inner = [i for i in ids if i != n]
    if len(inner) > m:
        raise ShrinkError(f"{len(ids)} layer ids do not fit a {m}-layer canary")
    out: list[int] = []
    for pos, k in enumerate(inner):
        room = m - 1 - (len(inner) - 1 - pos)  # leave a slot for every id after this one
        want = min(room, max(1 if k > 0 else 0, round(k * m / n)))  # only id 0 is the embeddings' output
        out.append(max(want, out[-1] + 1 if out else 0))
    return out + [m for _ in last]


def canary_layers(ids: list[int], n: int) -> int:
    """Layers of the canary: 4, or more when there are more ids; never more than the target has."""
    return min(n, max(4, len(ids)))


def _need(cfg: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if not isinstance(cfg.get(k), int)]
    if missing:
        raise ShrinkError(f"config.json has no {', '.join(missing)}")


def text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config (itself, or a multimodal wrapper's ``text_config``)."""
    inner = cfg.get("text_config")
    return inner if isinstance(inner, dict) else cfg


def shrink(cfg: dict[str, Any], layers: int, tp: int = 1) -> dict[str, Any]:
    """A canary config of ``layers`` decoder layers whose attention splits over ``tp`` ranks."""
    if "text_config" in cfg:
        raise ShrinkError(f"no canary for the multimodal wrapper {cfg.get('architectures')}; "
                          "launch with --no-canary to skip it")
    fam = family(cfg)
    _need(cfg, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    out = copy.deepcopy(cfg)
    out.pop("quantization_config", None)
    heads = max(4, 2 * tp)
    mha = cfg.get("num_key_value_heads", cfg["num_attention_heads"]) == cfg["num_attention_heads"]
    kv = heads if mha else max(2, tp)
    out.update(num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
               hidden_size=HEAD_DIM * heads, intermediate_size=2 * HEAD_DIM * heads)
    if "head_dim" in cfg:
        out["head_dim"] = HEAD_DIM
    if "max_window_layers" in cfg:
        out["max_window_layers"] = layers
    if fam == "qwen3_moe":
        _need(cfg, "num_experts", "num_experts_per_tok")
        out.update(num_experts=8, num_experts_per_tok=min(2, cfg["num_experts_per_tok"]),
                   moe_intermediate_size=2 * HEAD_DIM, decoder_sparse_step=1,
                   mlp_only_layers=[i for i in cfg.get("mlp_only_layers") or [] if i < layers])
    elif fam == "deepseek":
        _need(cfg, "n_routed_experts", "num_experts_per_tok", *MLA_KEPT)
        experts = 8
        groups = 2 if int(cfg.get("n_group") or 1) > 1 else 1
        out.update(n_routed_experts=experts, num_experts_per_tok=min(2, cfg["num_experts_per_tok"]),
                   moe_intermediate_size=2 * HEAD_DIM, n_group=groups,
                   topk_group=min(int(cfg.get("topk_group") or 1), groups),
                   first_k_dense_replace=min(int(cfg.get("first_k_dense_replace") or 0), 1),
                   num_nextn_predict_layers=0)
        if cfg.get("q_lora_rank"):
            out["q_lora_rank"] = 2 * HEAD_DIM
    return out


def dtype_of(cfg: dict[str, Any]) -> str:
    """The checkpoint's dtype as a safetensors name (BF16 unless the config says float16/float32)."""
    name = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    return {"float16": "F16", "float32": "F32"}.get(name, "BF16")


Tensor = tuple[str, tuple[int, ...], str]  # name, shape, fill ("random" | "ones" | "zeros")


def _dense_mlp(p: str, h: int, inter: int, bias: bool = False) -> list[Tensor]:
    out: list[Tensor] = [(f"{p}gate_proj.weight", (inter, h), "random"), (f"{p}up_proj.weight", (inter, h), "random"),
                         (f"{p}down_proj.weight", (h, inter), "random")]
    if bias:
        out += [(f"{p}gate_proj.bias", (inter,), "zeros"), (f"{p}up_proj.bias", (inter,), "zeros"),
                (f"{p}down_proj.bias", (h,), "zeros")]
    return out


def _experts(p: str, h: int, inter: int, n: int) -> list[Tensor]:
    return [t for e in range(n) for t in _dense_mlp(f"{p}experts.{e}.", h, inter)]


def _gqa(p: str, cfg: dict[str, Any]) -> list[Tensor]:
    h, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    hd = cfg.get("head_dim") or h // nh
    out: list[Tensor] = [(f"{p}q_proj.weight", (nh * hd, h), "random"), (f"{p}k_proj.weight", (nkv * hd, h), "random"),
                         (f"{p}v_proj.weight", (nkv * hd, h), "random"), (f"{p}o_proj.weight", (h, nh * hd), "random")]
    if cfg.get("attention_bias"):
        out += [(f"{p}q_proj.bias", (nh * hd,), "zeros"), (f"{p}k_proj.bias", (nkv * hd,), "zeros"),
                (f"{p}v_proj.bias", (nkv * hd,), "zeros"), (f"{p}o_proj.bias", (h,), "zeros")]
    if str(cfg.get("model_type", "")).startswith("qwen3"):
        out += [(f"{p}q_norm.weight", (hd,), "ones"), (f"{p}k_norm.weight", (hd,), "ones")]
    return out


def _mla(p: str, cfg: dict[str, Any]) -> list[Tensor]:
    h, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    nope, rope, v, kvl = (cfg[k] for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank"))
    ql = cfg.get("q_lora_rank")
    out: list[Tensor] = (
        [(f"{p}q_a_proj.weight", (ql, h), "random"), (f"{p}q_a_layernorm.weight", (ql,), "ones"),
         (f"{p}q_b_proj.weight", (nh * (nope + rope), ql), "random")]
        if ql else [(f"{p}q_proj.weight", (nh * (nope + rope), h), "random")])
    return out + [(f"{p}kv_a_proj_with_mqa.weight", (kvl + rope, h), "random"),
                  (f"{p}kv_a_layernorm.weight", (kvl,), "ones"),
                  (f"{p}kv_b_proj.weight", (nh * (nope + v), kvl), "random"),
                  (f"{p}o_proj.weight", (h, nh * v), "random")]


def _mlp(p: str, i: int, cfg: dict[str, Any], fam: str) -> list[Tensor]:
    h = cfg["hidden_size"]
    if fam == "qwen3_moe":
        step = int(cfg.get("decoder_sparse_step") or 1)
        if i not in (cfg.get("mlp_only_layers") or []) and cfg["num_experts"] > 0 and (i + 1) % step == 0:
            e = cfg["num_experts"]
            return [(f"{p}gate.weight", (e, h), "random"), *_experts(p, h, cfg["moe_intermediate_size"], e)]
    if fam == "deepseek":
        freq = int(cfg.get("moe_layer_freq") or 1)
        if cfg.get("n_routed_experts") and i >= int(cfg.get("first_k_dense_replace") or 0) and i % freq == 0:
            e, inter = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
            out: list[Tensor] = [(f"{p}gate.weight", (e, h), "random")]
            if cfg.get("topk_method") == "noaux_tc":
                out.append((f"{p}gate.e_score_correction_bias", (e,), "zeros"))
            out += _experts(p, h, inter, e)
            if cfg.get("n_shared_experts"):
                out += _dense_mlp(f"{p}shared_experts.", h, inter * int(cfg["n_shared_experts"]))
            return out
    return _dense_mlp(p, h, cfg["intermediate_size"], bool(cfg.get("mlp_bias")))


def weight_layout(cfg: dict[str, Any]) -> list[Tensor]:
    """Every tensor of a Hugging Face checkpoint of this config (the names vLLM's loaders read)."""
    fam = family(cfg)
    h, vocab = cfg["hidden_size"], cfg["vocab_size"]
    out: list[Tensor] = [("model.embed_tokens.weight", (vocab, h), "random")]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(f"{p}input_layernorm.weight", (h,), "ones"), (f"{p}post_attention_layernorm.weight", (h,), "ones")]
        out += _mla(f"{p}self_attn.", cfg) if fam == "deepseek" else _gqa(f"{p}self_attn.", cfg)
        out += _mlp(f"{p}mlp.", i, cfg, fam)
    out.append(("model.norm.weight", (h,), "ones"))
    if not cfg.get("tie_word_embeddings"):
        out.append(("lm_head.weight", (vocab, h), "random"))
    return out
