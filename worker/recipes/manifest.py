"""The end of an EAGLE-3 recipe run: the outputs event, ``manifest.json`` (or one per rank) and the result event."""

from __future__ import annotations

import os
import time
from typing import Any

from worker.recipes import outputs
from worker.recipes.outputs import count_hs, hs_bytes


def finish(recipe: Any, t_start: float, error: str | None) -> None:
    """``recipe`` is an ``eagle3.Eagle3Recipe`` after its steps ran (or failed)."""
    res = recipe.verify_result or {}
    verified = bool(res.get("verified")) and not res.get("stray_locks") and error is None
    samples = int(res.get("samples", count_hs(recipe.out, recipe.span)))
    nbytes = int(res["bytes"]) if "bytes" in res else hs_bytes(recipe.out, recipe.span)
    skipped = list(getattr(recipe, "client_errors", []))  # samples speculators reported skipped, with why
    recipe.events.outputs(str(recipe.out), samples, verified, nbytes, list(res.get("stray_locks", [])),
                          client_errors=len(skipped), first_client_error=skipped[0] if skipped else None)
    cfg = recipe.cfg
    if recipe.out.is_dir() and hasattr(recipe, "layer_ids"):
        manifest = {
            "kind": "eagle3-extract", "run_id": os.environ.get("EORCH_RUN_ID"), "model": recipe.model,
            "data": recipe.data, "layer_ids": recipe.layer_ids, "layer_ids_note": recipe.layer_note,
            "legacy_output_ids": cfg.get("legacy_output_ids"), "hs_backend": getattr(recipe, "backend", None),
            "samples": samples, "expected": res.get("expected"), "world_size": cfg.get("world_size", 1),
            "rank": cfg.get("rank", 0), "span": recipe.span, "verified": verified, "bytes": nbytes,
            "tokens": res.get("tokens"), "hidden_size": res.get("hidden_size"), "dtype": res.get("dtype"),
            "versions": recipe.info.get("versions"), "extract": recipe.info.get("extract"),
            "canary": recipe.info.get("canary"),
            "timings_s": recipe.timings, "started_at": t_start, "finished_at": time.time(), "error": error,
        }
        ws = int(cfg.get("world_size") or 1)  # ranks sharing one output dir keep their own manifest
        name = "manifest.json" if ws == 1 else f"manifest-rank{cfg['rank']}-of-{ws}.json"
        outputs.write_json_atomic(recipe.out / name, manifest)
    if verified:
        outputs.clean_staging(recipe.staging)
    recipe.events.result(error is None and verified, error)
