"""Writes a canary checkpoint on the host: the target's config shrunk (``shrink``), its tokenizer files, random
weights in a few safetensors shards.  Stdlib only, no hub access, no torch: weights are random bytes whose
exponent bits are pinned so every value is finite and small (|w| in [2^-7, 2^-5)), norms are ones.

    python3 -m worker.recipes.tiny_model SRC DST --layer-ids 2,4,5,8 [--tp N] [--shards 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

from worker.recipes import shrink

# Files of a model directory that are weights (never copied); everything else at the top level is copied:
# tokenizer files, chat templates, generation_config.json, remote code (*.py).
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".ckpt")
_WIDTH = {"BF16": 2, "F16": 2, "F32": 4}
_ONE = {"BF16": b"\x80\x3f", "F16": b"\x00\x3c", "F32": b"\x00\x00\x80\x3f"}
# byte of each element that holds the sign and the top exponent bits → its pinned value (sign kept)
_PIN = {"BF16": (1, 0x3C, 0x80), "F16": (1, 0x20, 0x83), "F32": (3, 0x3C, 0x80)}


def _fill(kind: str, count: int, dtype: str, rng: random.Random) -> bytes:
    width = _WIDTH[dtype]
    if kind == "ones":
        return _ONE[dtype] * count
    if kind == "zeros":
        return bytes(width * count)
    data = bytearray(rng.randbytes(width * count))
    pos, base, keep = _PIN[dtype]
    table = bytes(base | (b & keep) for b in range(256))
    data[pos::width] = data[pos::width].translate(table)
    return bytes(data)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def write_shards(tensors: list[shrink.Tensor], dst: Path, dtype: str, shards: int, seed: int = 0) -> dict[str, Any]:
    """Writes ``model-0000i-of-0000N.safetensors`` + ``model.safetensors.index.json``; returns the index."""
    rng = random.Random(seed)
    total = sum(_numel(s) for _, s, _ in tensors) * _WIDTH[dtype]
    per_shard = max(1, -(-total // max(1, shards)))
    groups: list[list[shrink.Tensor]] = [[]]
    size = 0
    for t in tensors:
        nbytes = _numel(t[1]) * _WIDTH[dtype]
        if groups[-1] and size + nbytes > per_shard and len(groups) < shards:
            groups.append([])
            size = 0
        groups[-1].append(t)
        size += nbytes
    weight_map: dict[str, str] = {}
    for i, group in enumerate(groups, 1):
        name = f"model-{i:05d}-of-{len(groups):05d}.safetensors"
        header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for tname, shape, _ in group:
            nbytes = _numel(shape) * _WIDTH[dtype]
            header[tname] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
            weight_map[tname] = name
        head = json.dumps(header, separators=(",", ":")).encode()
        head += b" " * (-len(head) % 8)
        tmp = dst / (name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(len(head).to_bytes(8, "little") + head)
            for _, shape, kind in group:
                f.write(_fill(kind, _numel(shape), dtype, rng))
        os.replace(tmp, dst / name)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return index


def build(src: Path, dst: Path, layer_ids: list[int], tp: int = 1, shards: int = 3) -> dict[str, Any]:
    """The canary of the model in ``src`` written to ``dst``; returns what was built (ids, sizes, dropped keys).
    Raises ``shrink.ShrinkError`` (or OSError/ValueError for an unreadable config)."""
    target = json.loads((src / "config.json").read_text(encoding="utf-8"))
    n = int(shrink.text_config(target).get("num_hidden_layers") or 0)
    if n <= 0:
        raise shrink.ShrinkError(f"{src / 'config.json'} has no num_hidden_layers")
    layers = shrink.canary_layers(layer_ids, n)
    cfg = shrink.shrink(target, layers, tp)
    ids = shrink.remap_layer_ids(layer_ids, n, layers)
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    copied = []
    for item in sorted(src.iterdir()):
        if item.is_file() and item.name != "config.json" and not item.name.endswith(_WEIGHTS) \
                and not item.name.endswith(".index.json"):
            shutil.copy2(item, dst / item.name)
            copied.append(item.name)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    index = write_shards(shrink.weight_layout(cfg), dst, shrink.dtype_of(cfg), shards)
    return {
        "model": str(dst), "family": shrink.family(cfg), "architecture": (cfg.get("architectures") or [None])[0],
        "num_hidden_layers": layers, "target_layers": n, "layer_ids": ids, "target_layer_ids": list(layer_ids),
        "hidden_size": cfg["hidden_size"], "bytes": index["metadata"]["total_size"],
        "shards": len(set(index["weight_map"].values())), "copied": copied,
        "dropped": ["quantization_config"] if "quantization_config" in target else [],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tiny_model")
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--layer-ids", required=True, help="the target's layer ids, comma-separated")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--shards", type=int, default=3)
    a = p.parse_args(argv)
    try:
        info = build(a.src, a.dst, [int(x) for x in a.layer_ids.split(",")], a.tp, a.shards)
    except (shrink.ShrinkError, OSError, ValueError) as exc:
        print(f"tiny_model: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
