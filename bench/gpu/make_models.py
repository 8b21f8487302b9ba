"""Random-weight models for the GPU scenarios, with the tokenizer and datasets of scripts/make-tiny-model.py.

    python3 bench/gpu/make_models.py moe --out DIR [--samples 24]        # tiny DeepSeek-V3/Kimi MoE with MLA
    python3 bench/gpu/make_models.py llama-1b --out DIR [--samples 600]  # ~1.1 B Llama for P6 (built on the GPU)

Writes ``DIR/model`` (bf16 safetensors + tokenizer + chat template), ``DIR/prepared`` (what
``speculators generate-offline-data`` reads) and ``DIR/chat.jsonl``; prints one JSON line like
make-tiny-model.py.  Deterministic for a seed.

The MoE is ``DeepseekV3ForCausalLM`` (Kimi-K2's architecture): MLA attention with DeepSeek's own head
geometry (``kv_lora_rank`` 512, ``qk_rope_head_dim`` 64, ``qk_nope_head_dim`` 128, ``v_head_dim`` 128, a
``q_lora_rank``), one dense layer then MoE layers (16 routed experts, 4 per token, one shared expert,
sigmoid scores with ``noaux_tc`` correction bias, ``n_group`` 1 as Kimi-K2).  The correction bias is spaced
0.1 apart per expert while the gate's own scores vary by < 0.01, so the top-4 choice never hangs on a
near-tie: a bf16 engine and a float32 reference otherwise pick different experts for a few tokens and a
per-token cosine against transformers stops measuring the extraction.  No quantisation (bf16 weights).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _tiny() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_tiny_model", REPO / "scripts" / "make-tiny-model.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_moe(out: Path, seed: int, layers: int = 6) -> None:
    import torch
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    torch.manual_seed(seed)
    cfg = DeepseekV3Config(
        vocab_size=512, hidden_size=256, intermediate_size=512, moe_intermediate_size=128,
        num_hidden_layers=layers, num_attention_heads=8, num_key_value_heads=8,
        n_shared_experts=1, n_routed_experts=16, num_experts_per_tok=4, n_group=1, topk_group=1,
        routed_scaling_factor=2.5, norm_topk_prob=True, first_k_dense_replace=1,
        kv_lora_rank=512, q_lora_rank=128, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
        max_position_embeddings=2048, rope_scaling=None, bos_token_id=1, eos_token_id=2, pad_token_id=3,
        tie_word_embeddings=False, torch_dtype="bfloat16",
    )
    model = DeepseekV3ForCausalLM(cfg)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("mlp.gate.weight"):
                param.mul_(0.1)  # gate scores vary by < 0.01 around sigmoid(0) = 0.5
        for name, buf in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buf.copy_(torch.randperm(buf.numel(), generator=torch.Generator().manual_seed(seed)).float() * 0.1)
    model.to(torch.bfloat16).save_pretrained(out, max_shard_size="2MB")
    text = json.loads((out / "config.json").read_text())
    assert "e_score_correction_bias" in "".join(
        json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]), "bias not saved"
    # transformers 5 no longer writes these; vLLM reads them (without them: softmax scores, no correction bias)
    text.update(architectures=["DeepseekV3ForCausalLM"], topk_method="noaux_tc", scoring_func="sigmoid",
                num_nextn_predict_layers=0)  # Kimi-K2 has no MTP layer
    (out / "config.json").write_text(json.dumps(text, indent=2))


def build_llama_1b(out: Path, seed: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=32768, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=2, pad_token_id=3, tie_word_embeddings=False, torch_dtype="bfloat16",
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, max_shard_size="1GB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=["moe", "llama-1b"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--samples", type=int, default=24)
    p.add_argument("--min-len", type=int, default=16)
    p.add_argument("--max-len", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    tiny = _tiny()
    model_dir = a.out / "model"
    if a.force and a.out.exists():
        shutil.rmtree(a.out)
    if not (model_dir / "config.json").exists():
        model_dir.mkdir(parents=True, exist_ok=True)
        tiny.build_tokenizer(model_dir, vocab_words=300)
        (build_moe if a.kind == "moe" else build_llama_1b)(model_dir, a.seed)
    if not (a.out / "prepared" / "state.json").exists():
        tiny.build_datasets(a.out, a.samples, a.min_len, a.max_len, vocab_used=300 + len(tiny.SPECIALS), seed=a.seed)
    print(json.dumps({"model": str(model_dir), "prepared": str(a.out / "prepared"), "chat": str(a.out / "chat.jsonl"),
                      "kind": a.kind, "samples": a.samples}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
