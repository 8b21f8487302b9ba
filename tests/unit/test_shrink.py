"""The canary's shrinking, on real config.json files of the families it supports (tests/data/configs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.recipes import shrink, tiny_model

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
NAMES = ["llama-3.1-8b-instruct", "qwen3-8b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k2-instruct"]


def config(name: str) -> dict[str, Any]:
    return dict(json.loads((CONFIGS / f"{name}.json").read_text()))


def default_ids(n: int) -> list[int]:
    return sorted({2, n // 2, n - 3, n})


class TestShrink:
    @pytest.mark.parametrize("name", NAMES)
    @pytest.mark.parametrize("tp", [1, 2, 8])
    def test_same_architecture_fewer_layers_and_tp_divides(self, name: str, tp: int) -> None:
        """Architecture, model_type, vocabulary, context and dtype stay; 4 layers; heads split over TP."""
        target = config(name)
        small = shrink.shrink(target, 4, tp)
        for key in ("architectures", "model_type", "vocab_size", "max_position_embeddings", "rope_scaling",
                    "tie_word_embeddings", "torch_dtype", "auto_map", "bos_token_id", "eos_token_id"):
            assert small.get(key) == target.get(key), key
        assert small["num_hidden_layers"] == 4
        heads, kv = small["num_attention_heads"], small["num_key_value_heads"]
        assert heads % tp == 0 and (kv % tp == 0 or tp % kv == 0) and heads % kv == 0
        assert small["hidden_size"] < target["hidden_size"]
        assert "quantization_config" not in small
        assert target == config(name), "the target's config is not modified"

    def test_gqa_stays_gqa_and_mha_stays_mha(self) -> None:
        """Llama-3 (8 KV heads for 32) keeps fewer KV heads than heads; DeepSeek's MLA config keeps kv = heads."""
        llama = shrink.shrink(config("llama-3.1-8b-instruct"), 4)
        assert llama["num_key_value_heads"] < llama["num_attention_heads"]
        ds = shrink.shrink(config("deepseek-v3"), 4)
        assert ds["num_key_value_heads"] == ds["num_attention_heads"]

    def test_qwen3_head_dim_64(self) -> None:
        """Qwen3 states head_dim (128): the canary's is 64, which every CPU/GPU attention backend supports."""
        assert shrink.shrink(config("qwen3-8b"), 4)["head_dim"] == 64
        assert "head_dim" not in shrink.shrink(config("llama-3.1-8b-instruct"), 4)

    def test_qwen3_moe_experts_cut_and_every_layer_sparse(self) -> None:
        small = shrink.shrink(config("qwen3-30b-a3b"), 4)
        assert (small["num_experts"], small["num_experts_per_tok"], small["decoder_sparse_step"]) == (8, 2, 1)
        assert small["moe_intermediate_size"] < config("qwen3-30b-a3b")["moe_intermediate_size"]

    @pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k2-instruct"])
    def test_mla_keeps_head_dims_and_cuts_experts_groups_ranks(self, name: str) -> None:
        """MLA head dims stay (the MLA kernels are built for them); experts, groups, q rank, dense prefix cut."""
        target, small = config(name), shrink.shrink(config(name), 4)
        for key in shrink.MLA_KEPT:
            assert small[key] == target[key], key
        assert small["n_routed_experts"] == 8 and small["num_experts_per_tok"] == 2
        assert small["n_routed_experts"] % small["n_group"] == 0 and small["topk_group"] <= small["n_group"]
        assert small["num_experts_per_tok"] <= small["topk_group"] * small["n_routed_experts"] // small["n_group"]
        assert small["q_lora_rank"] < target["q_lora_rank"]
        assert small["first_k_dense_replace"] == 1  # one dense layer, then MoE layers: both code paths
        assert small["num_nextn_predict_layers"] == 0

    def test_unsupported_architecture_says_what_to_do(self) -> None:
        with pytest.raises(shrink.ShrinkError, match="--no-canary"):
            shrink.shrink({**config("qwen3-8b"), "architectures": ["GPT2LMHeadModel"]}, 4)
        with pytest.raises(shrink.ShrinkError, match="--no-canary"):
            shrink.shrink({"architectures": ["KimiK25ForConditionalGeneration"], "text_config": config("kimi-k2-instruct")}, 4)


class TestRemapLayerIds:
    @pytest.mark.parametrize("n", [8, 32, 36, 48, 61])
    def test_default_ids_keep_order_and_last_is_last(self, n: int) -> None:
        ids = shrink.remap_layer_ids(default_ids(n), n, 4)
        assert ids == sorted(set(ids)) and ids[-1] == 4 and all(1 <= i < 4 for i in ids[:-1])

    def test_without_the_last_layer_every_id_is_inside(self) -> None:
        assert shrink.remap_layer_ids([3, 30, 58], 61, 4) == [1, 2, 3]

    def test_zero_stays_the_embeddings(self) -> None:
        assert shrink.remap_layer_ids([0, 30, 61], 61, 4)[0] == 0

    def test_more_ids_than_layers_gets_more_layers(self) -> None:
        ids = list(range(1, 9))
        m = shrink.canary_layers(ids, 61)
        assert m == 8 and shrink.remap_layer_ids(ids, 61, m) == sorted(set(shrink.remap_layer_ids(ids, 61, m)))


class TestWeights:
    @pytest.mark.parametrize("name", NAMES)
    def test_layout_of_the_full_config_names_the_real_checkpoint_tensors(self, name: str) -> None:
        """Names as in the published checkpoints' index (layer 0, an MoE layer's expert 0, lm_head)."""
        names = {t[0] for t in shrink.weight_layout(config(name))}
        assert "model.embed_tokens.weight" in names and "lm_head.weight" in names
        if name.startswith(("deepseek", "kimi")):
            assert {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "model.layers.0.mlp.gate_proj.weight",
                    "model.layers.3.mlp.experts.0.gate_proj.weight", "model.layers.3.mlp.shared_experts.up_proj.weight",
                    "model.layers.3.mlp.gate.e_score_correction_bias", "model.layers.0.self_attn.q_a_layernorm.weight",
                    "model.layers.60.mlp.experts.255.down_proj.weight"} <= names
        elif name == "qwen3-30b-a3b":
            assert {"model.layers.47.mlp.experts.127.down_proj.weight", "model.layers.0.mlp.gate.weight",
                    "model.layers.0.self_attn.q_norm.weight"} <= names
        else:
            assert f"model.layers.{config(name)['num_hidden_layers'] - 1}.mlp.down_proj.weight" in names

    def test_canary_checkpoint_is_valid_safetensors_with_finite_small_values(self, tmp_path: Path) -> None:
        """Shards parse as safetensors (header, offsets cover the file), random values are finite, |w| < 2^-5."""
        import struct

        src = tmp_path / "target"
        src.mkdir()
        (src / "config.json").write_text(json.dumps(config("qwen3-30b-a3b")))
        (src / "tokenizer.json").write_text("{}")
        (src / "model-00001-of-00016.safetensors").write_bytes(b"not copied")
        info = tiny_model.build(src, tmp_path / "canary", [2, 24, 45, 48])
        dst = tmp_path / "canary"
        assert info["layer_ids"] == [1, 2, 3, 4] and info["shards"] == 3 and info["copied"] == ["tokenizer.json"]
        assert info["dropped"] == []
        index = json.loads((dst / "model.safetensors.index.json").read_text())
        seen = set()
        for shard in sorted(set(index["weight_map"].values())):
            raw = (dst / shard).read_bytes()
            n = int.from_bytes(raw[:8], "little")
            header = json.loads(raw[8:8 + n])
            header.pop("__metadata__")
            end = max(v["data_offsets"][1] for v in header.values())
            assert 8 + n + end == len(raw)
            for tname, meta in header.items():
                seen.add(tname)
                a, b = meta["data_offsets"]
                blob = raw[8 + n + a: 8 + n + b]
                values = [struct.unpack("<f", b"\x00\x00" + blob[i:i + 2])[0] for i in range(0, min(len(blob), 4000), 2)]
                assert all(abs(v) < 2 ** -5 or v == 1.0 for v in values), tname
        assert seen == set(index["weight_map"]) == {t[0] for t in shrink.weight_layout(json.loads((dst / "config.json").read_text()))}


class TestCanaryCfg:
    def test_same_recipe_few_samples_one_rank_free_port_no_nesting(self) -> None:
        """The canary keeps interpreters, vLLM args, env, TP; runs 4 samples on one rank, never keeps its server
        and never runs a canary itself."""
        from worker.recipes.canary import canary_cfg
        from worker.recipes.eagle3_plan import DEFAULTS

        target = {**DEFAULTS, "model": "/m", "data": "/d", "output": "/o", "vllm_python": "/py/v",
                  "speculators_python": "/py/s", "vllm_args": ["--enforce-eager"], "env": {"A": "1"},
                  "tensor_parallel_size": 2, "world_size": 4, "rank": 3, "port": 8000, "canary": True,
                  "keep_server": True, "max_samples": 1000}
        c = canary_cfg(target, "/run/canary/model", "/run/canary/hs", [1, 2, 3, 4])
        for key in ("vllm_python", "speculators_python", "vllm_args", "env", "tensor_parallel_size", "data"):
            assert c[key] == target[key], key
        assert (c["model"], c["output"], c["layer_ids"]) == ("/run/canary/model", "/run/canary/hs", [1, 2, 3, 4])
        assert (c["max_samples"], c["world_size"], c["rank"], c["port"]) == (4, 1, 0, 0)
        assert c["canary"] is False and c["keep_server"] is False
        assert canary_cfg({**target, "max_samples": 2}, "/m", "/o", [1])["max_samples"] == 2
