"""Convert the old speculators generator's ``data_{i}.pt`` files into ``hs_{i}.safetensors``.

    python -m worker.convert_legacy DIR [--out OUT] [--legacy-layer-ids 2,30,58,60] [--force]

Run with an interpreter that has torch + safetensors (the speculators env).  Each old file holds
``{"input_ids": [T], "hidden_states": [per-layer [T, H]], "loss_mask": [T]}`` recorded *after* each target layer
ran (output of layer k).  vLLM's ``extract_hidden_states`` records the *input* of layer k, so the same tensors
are relabelled k+1; the manifest says so.  Output files hold ``hidden_states`` ``[T, L, H]``, ``token_ids``
``[T]`` (int64) and ``loss_mask`` ``[T]``; existing outputs are skipped unless ``--force``.  When ``datasets``
is importable, ``OUT/prepared`` (``input_ids``, ``loss_mask``) is written too, for ``speculators train``.
The last stdout line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

_OLD = re.compile(r"^data_(\d+)\.pt$")
CONVENTION = ("input-of-layer (vLLM extract_hidden_states): id k is the hidden state entering decoder layer k; "
              "converted from the old output-of-layer ids by +1")


def legacy_ids(src: Path, given: str | None) -> list[int] | None:
    if given:
        return [int(x) for x in given.split(",") if x.strip()]
    cfg = src / "data_config.json"
    if cfg.is_file():
        data = json.loads(cfg.read_text())
        for key in ("layer_ids", "target_layer_ids", "aux_layer_ids"):
            if isinstance(data.get(key), list):
                return [int(x) for x in data[key]]
    return None


def convert_one(path: Path, target: Path) -> dict[str, Any]:
    import torch
    from safetensors.torch import save_file

    old = torch.load(path, map_location="cpu", weights_only=True)
    ids = torch.as_tensor(old["input_ids"]).reshape(-1).to(torch.int64)
    layers = old["hidden_states"]
    hs = torch.stack([torch.as_tensor(h).reshape(ids.shape[0], -1) for h in layers], dim=1).contiguous()
    tensors = {"hidden_states": hs, "token_ids": ids.clone()}
    mask = old.get("loss_mask")
    if mask is not None:
        tensors["loss_mask"] = torch.as_tensor(mask).reshape(-1).to(torch.int64).clone()
    tmp = target.with_suffix(".tmp")
    save_file(tensors, str(tmp))
    tmp.replace(target)
    return {"tokens": int(ids.shape[0]), "layers": int(hs.shape[1]), "hidden": int(hs.shape[2]),
            "input_ids": ids.tolist(), "loss_mask": tensors["loss_mask"].tolist() if mask is not None else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="convert_legacy", description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--legacy-layer-ids", help="old output-of-layer ids, e.g. 2,30,58,60 (else data_config.json)")
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    src, out = a.dir, a.out or a.dir
    files = sorted(((int(m.group(1)), f) for f in src.iterdir() if (m := _OLD.match(f.name))), key=lambda t: t[0])
    if not files:
        sys.stdout.write(json.dumps({"ok": False, "error": f"no data_*.pt in {src}"}) + "\n")
        return 1
    old_ids = legacy_ids(src, a.legacy_layer_ids)
    previous = out / "manifest.json"
    if old_ids is None and previous.is_file():  # a re-run keeps what the first run was told
        old_ids = json.loads(previous.read_text()).get("legacy_output_ids")
    new_ids = [i + 1 for i in old_ids] if old_ids else None
    print(f"converting {len(files)} files; layer ids {old_ids} (output-of-layer) -> {new_ids} (input-of-layer)")
    out.mkdir(parents=True, exist_ok=True)
    t0, done, skipped, nbytes, shape = time.monotonic(), 0, 0, 0, None
    rows: dict[str, list[Any]] = {"input_ids": [], "loss_mask": []}
    for n, (idx, path) in enumerate(files, 1):
        target = out / f"hs_{idx}.safetensors"
        if target.exists() and not a.force:
            skipped += 1
        else:
            info = convert_one(path, target)
            shape = (info["layers"], info["hidden"])
            if old_ids and info["layers"] != len(old_ids):
                raise SystemExit(f"{path}: {info['layers']} layers but {len(old_ids)} layer ids given")
            rows["input_ids"].append(info["input_ids"])
            rows["loss_mask"].append(info["loss_mask"] or [1] * info["tokens"])
            done += 1
        nbytes += target.stat().st_size
        if n % 100 == 0 or n == len(files):
            print(f"{n}/{len(files)} files")
    prepared = None
    if rows["input_ids"] and len(rows["input_ids"]) == len(files):
        try:
            from datasets import Dataset

            ds = Dataset.from_dict(rows)
            ds.set_format(type="torch")
            ds.save_to_disk(str(out / "prepared"))
            prepared = str(out / "prepared")
        except ImportError:
            pass
    manifest = {
        "kind": "eagle3-legacy-conversion", "source": str(src), "samples": len(files), "converted": done,
        "skipped_existing": skipped, "bytes": nbytes, "layer_ids": new_ids, "legacy_output_ids": old_ids,
        "layer_ids_note": {"convention": CONVENTION,
                           "relabelled": "old output-of-layer id k is new input-of-layer id k+1"},
        "layers_hidden": shape, "prepared": prepared, "seconds": round(time.monotonic() - t0, 2),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"NOTE layer ids relabelled +1: {old_ids} -> {new_ids}")
    sys.stdout.write(json.dumps({"ok": True, **manifest}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
