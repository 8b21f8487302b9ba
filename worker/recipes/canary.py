"""The canary: the recipe's own code path on a shrunken copy of the target, before the full run is started.

``run(recipe, t_start)`` builds ``RUN_DIR/canary/model`` (``tiny_model``: same architecture, model_type,
tokenizer files and vocabulary, a few layers, the spec's layer ids remapped), then runs the same recipe on it —
same interpreters, vLLM args, env, patch set (the same environments), same tensor parallel size, same staging
— on ``canary_samples`` samples of the same data, with the same output checks (``hs_verify``: shape
``[T, len(ids), hidden]``, token ids = input ids).  Its server and client write ``RUN_DIR/canary/*.log`` only:
the run log (and so the controller's parser, phases and shards) stays the full run's.  The verdict is an event
``{"kind": "canary", "state": succeeded|failed|cancelled, "seconds", "step", "error", "tiny", "log_tail"}``;
``log_tail`` carries the end of the canary's logs so the controller can find the root cause in them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from worker.events import EventWriter
from worker.recipes import shrink, tiny_model

CANARY_DIR = "canary"
TAIL_LINES = {"vllm.log": 400, "speculators.log": 150}
TAIL_BYTES = 96 * 1024


def canary_cfg(cfg: dict[str, Any], model: str, out: str, ids: list[int]) -> dict[str, Any]:
    """The spec the canary runs: the target's, on the tiny model, a few samples, one rank, a free port."""
    samples = int(cfg.get("canary_samples") or 4)
    if cfg.get("max_samples"):
        samples = min(samples, int(cfg["max_samples"]))
    return {**cfg, "model": model, "output": out, "layer_ids": ids, "legacy_output_ids": None,
            "max_samples": samples, "world_size": 1, "rank": 0, "port": 0, "canary": False, "keep_server": False,
            "health_timeout_s": min(float(cfg.get("health_timeout_s") or 1800), 900.0)}


def log_tail(run_dir: Path) -> str:
    """The last lines of the canary's server and client logs (where a failure's traceback is)."""
    parts = []
    for name, lines in TAIL_LINES.items():
        try:
            text = (run_dir / name).read_bytes()[-TAIL_BYTES:].decode("utf-8", "replace")
        except OSError:
            continue
        parts.append("\n".join(text.split("\n")[-lines:]))
    return "\n".join(p for p in parts if p)


def run(parent: Any, t_start: float) -> dict[str, Any]:
    """Runs the canary for ``parent`` (an ``eagle3.Eagle3Recipe`` after ``resolve``); returns the verdict
    (also emitted as the ``canary`` event).  Never raises for a failed canary: the verdict says so."""
    cdir = parent.run_dir / CANARY_DIR
    parent.events.emit("canary", state="started")
    parent.say("canary: building a shrunken copy of the target")
    verdict: dict[str, Any] = {"status": "failed", "step": "build", "error": None, "tiny": None}
    try:
        tiny = tiny_model.build(Path(parent.model), cdir / "model", parent.layer_ids,
                                int(parent.cfg.get("tensor_parallel_size") or 1))
    except (shrink.ShrinkError, OSError, ValueError) as exc:
        verdict["error"] = f"cannot build the canary model: {exc}"
    else:
        verdict["tiny"] = tiny
        parent.say(f"canary: {tiny['architecture']} with {tiny['num_hidden_layers']} of {tiny['target_layers']} "
                   f"layers, hidden {tiny['hidden_size']}, layer ids {tiny['target_layer_ids']} → {tiny['layer_ids']}"
                   + (f" (dropped {', '.join(tiny['dropped'])})" if tiny["dropped"] else ""))
        cfg = canary_cfg(parent.cfg, tiny["model"], str(cdir / "hidden-states"), tiny["layer_ids"])
        child = type(parent)(cfg, cdir, EventWriter(cdir / "events.jsonl"), marker=f"{parent.marker}-canary",
                             label="canary: ")
        parent.nested = child
        try:
            rc = child.run(t_start)
        finally:
            parent.nested = None
        verdict.update(step=child.failed_step, error=child.error)
        verdict["status"] = "succeeded" if rc == 0 else "cancelled" if rc == 143 else "failed"
    verdict["seconds"] = round(time.time() - t_start, 3)
    tail = log_tail(cdir) if verdict["status"] == "failed" else ""
    parent.events.emit("canary", state=verdict["status"], seconds=verdict["seconds"], step=verdict["step"],
                       error=verdict["error"], tiny=verdict["tiny"], log_tail=tail)
    parent.say(f"canary: {verdict['status']} after {verdict['seconds']:.1f}s"
               + (f" at {verdict['step']}: {verdict['error']}" if verdict["status"] == "failed" else ""))
    return verdict
