"""Dataset counting and output verification, run with the *speculators* env's python (needs datasets,
safetensors, torch)::

    python -m worker.recipes.hs_verify count DATA [--max-samples N] [--result FILE]
    python -m worker.recipes.hs_verify verify DATA OUT --layers L [--max-samples N] [--result FILE]

Prints one JSON object on stdout (and writes it to FILE).  Heavy imports happen inside the functions so the ``worker`` package stays
importable by a stdlib-only python.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from worker.recipes.eagle3_plan import rank_range

_HS = re.compile(r"^hs_(\d+)\.safetensors$")


def _load(data: str) -> Any:
    from datasets import load_from_disk

    return load_from_disk(data)


def _range(rows: int, max_samples: int | None, world_size: int, rank: int) -> tuple[int, int]:
    return rank_range(min(rows, max_samples) if max_samples else rows, world_size, rank)


def count(data: str, max_samples: int | None, world_size: int = 1, rank: int = 0) -> dict[str, Any]:
    n = len(_load(data))
    start, end = _range(n, max_samples, world_size, rank)
    return {"rows": n, "expected": end - start, "start": start, "end": end}


def present_indices(out: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in out.iterdir() if (m := _HS.match(p.name))) if out.is_dir() else []


def _input_ids(ds: Any, batch: int = 1024) -> Any:
    """``rows(i)`` → row i's input_ids as a list, read a batch of plain rows at a time (row by row through
    the dataset's torch format costs a millisecond each); ascending ``i`` touches each batch once."""
    plain = ds.with_format(None)
    cache: dict[str, Any] = {"start": -1, "ids": []}

    def rows(i: int) -> list[int]:
        start = i - i % batch
        if cache["start"] != start:
            cache["start"], cache["ids"] = start, plain[start:start + batch]["input_ids"]
        return list(cache["ids"][i - start])

    return rows


def verify(data: str, out: Path, layers: int, max_samples: int | None, world_size: int = 1,
           rank: int = 0) -> dict[str, Any]:
    """Checks this rank's samples only: other ranks may share the output directory."""
    from safetensors import safe_open

    ds = _load(data)
    start, end = _range(len(ds), max_samples, world_size, rank)
    expected = end - start
    present = {i for i in present_indices(out) if start <= i < end}
    missing = [i for i in range(start, end) if i not in present]
    bad: list[dict[str, Any]] = []
    nbytes = 0
    hidden_size: int | None = None
    dtype: str | None = None
    tokens = 0
    rows = _input_ids(ds)
    for i in sorted(present):
        path = out / f"hs_{i}.safetensors"
        nbytes += path.stat().st_size
        try:
            with safe_open(str(path), framework="pt") as f:
                keys = set(f.keys())
                if not {"hidden_states", "token_ids"} <= keys:
                    raise ValueError(f"keys {sorted(keys)}; want hidden_states and token_ids")
                hs = f.get_slice("hidden_states")
                shape = hs.get_shape()
                token_ids = f.get_tensor("token_ids").tolist()
                dtype = str(hs.get_dtype())
        except Exception as exc:  # noqa: BLE001 - an unreadable file is a finding, not a crash
            bad.append({"index": i, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if i >= len(ds):
            bad.append({"index": i, "error": f"no dataset row {i}"})
            continue
        want_ids = rows(i)
        if len(shape) != 3 or shape[0] != len(want_ids) or shape[1] != layers:
            bad.append({"index": i, "error": f"hidden_states shape {shape}; want [{len(want_ids)}, {layers}, H]"})
        elif hidden_size is not None and shape[2] != hidden_size:
            bad.append({"index": i, "error": f"hidden size {shape[2]} differs from {hidden_size}"})
        elif token_ids != want_ids:
            bad.append({"index": i, "error": "token_ids differ from the dataset's input_ids"})
        else:
            hidden_size = shape[2]
            tokens += shape[0]
    return {
        "expected": expected, "start": start, "end": end, "samples": len(present), "missing": missing[:100], "missing_count": len(missing),
        "bad": bad[:100], "bad_count": len(bad), "bytes": nbytes, "hidden_size": hidden_size, "dtype": dtype,
        "tokens": tokens, "verified": not missing and not bad and expected > 0,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hs_verify")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("count")
    c.add_argument("data")
    c.add_argument("--max-samples", type=int)
    v = sub.add_parser("verify")
    v.add_argument("data")
    v.add_argument("out", type=Path)
    v.add_argument("--layers", type=int, required=True)
    v.add_argument("--max-samples", type=int)
    for sp in (c, v):
        sp.add_argument("--world-size", type=int, default=1)
        sp.add_argument("--rank", type=int, default=0)
        sp.add_argument("--result", type=Path, help="also write the JSON result to this file")
    a = p.parse_args(argv)
    result = (count(a.data, a.max_samples, a.world_size, a.rank) if a.cmd == "count"
              else verify(a.data, a.out, a.layers, a.max_samples, a.world_size, a.rank))
    text = json.dumps(result)
    sys.stdout.write(text + "\n")
    if a.result is not None:
        tmp = a.result.with_name(a.result.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(a.result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
