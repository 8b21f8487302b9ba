"""The canary's verdict as the history keeps it (pure): the host's ``canary`` step event → ``runs.canary``.

The host sends the end of the canary's server and client logs with a failed verdict (its logs stay out of the
run log, so the run's phases and shards are the full run's); the root cause is found in them by the same log
parser as a run's, with the catalogue's hint.  A failure the logs do not explain (a bad shape in the outputs,
a model that cannot be shrunk) keeps the recipe's one-line error as the root cause's message.
"""

from __future__ import annotations

from typing import Any

STATES = ("started", "succeeded", "failed", "cancelled")


def root_cause_of(log_tail: str, error: str | None, step: str | None) -> dict[str, Any]:
    from orchestrator.logparse import LogParser  # the parser loads its catalogue: only when a canary ended
    from orchestrator.logparse.signatures import signature_hint

    parser = LogParser()
    parser.feed(log_tail.encode("utf-8", "replace"))
    parser.finish()
    found = parser.analysis().to_json(file="").get("root_cause")
    root: dict[str, Any] = dict(found) if found else {
        "exception": None, "message": _usage_error(log_tail) or error or "the canary failed", "process": None,
        "traceback": None, "signature": None}
    root["hint"] = signature_hint(root["signature"]) if root.get("signature") else None
    root["canary_step"] = step
    root["canary_error"] = error
    return root


def _usage_error(log_tail: str) -> str | None:
    """The last argparse-style ``prog: error: …`` line (vLLM rejecting an argument exits 2 with no traceback)."""
    lines = [line.strip() for line in log_tail.split("\n") if ": error: " in line]
    return lines[-1] if lines else None


def canary_record(event: dict[str, Any]) -> dict[str, Any]:
    """``{"status": running|succeeded|failed|cancelled, "seconds", "step", "error", "root_cause", "model"}``."""
    state = str(event.get("state"))
    tiny = event.get("tiny") or {}
    seconds = event.get("seconds")
    return {
        "status": "running" if state == "started" else state,
        "seconds": float(seconds) if isinstance(seconds, int | float) else None,
        "step": event.get("step"),
        "error": event.get("error"),
        "root_cause": (root_cause_of(str(event.get("log_tail") or ""), event.get("error"), event.get("step"))
                       if state == "failed" else None),
        "model": {k: tiny.get(k) for k in ("architecture", "num_hidden_layers", "target_layers", "layer_ids",
                                           "target_layer_ids", "hidden_size", "dropped")} if tiny else None,
    }


def effective_root_cause(run_root_cause: dict[str, Any] | None, canary: dict[str, Any] | None) -> dict[str, Any] | None:
    """The canary's root cause when the canary failed (the full run never started, and the run log holds only
    the recipe's one-line summary of it), else the run's."""
    if canary and canary.get("status") == "failed":
        root = canary.get("root_cause")
        return dict(root) if isinstance(root, dict) else None
    return run_root_cause
