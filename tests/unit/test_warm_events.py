"""The kept server as the history records it: the recipe's server_kept / retry / stop events folded (pure)."""

from __future__ import annotations

from orchestrator.actions.warmserver import apply_warm_event

KEPT = {"kind": "server_kept", "ts": 100.0, "step": "extract", "error": "generate-offline-data exited 1",
        "idle_timeout_s": 1800.0, "load_s": 42.5}


def test_client_failure_then_two_retries_then_stop() -> None:
    """Each retry saves the server's load time once; the stop step ends it."""
    w = apply_warm_event(None, KEPT)
    assert w is not None and w["state"] == "waiting" and w["retries"] == 0 and w["saved_load_s"] == 0.0
    w = apply_warm_event(w, {"kind": "retry", "attempt": 1, "saved_load_s": 42.5})
    assert w is not None and (w["state"], w["retries"], w["saved_load_s"]) == ("retrying", 1, 42.5)
    w = apply_warm_event(w, {**KEPT, "step": "verify", "ts": 200.0})
    assert w is not None and (w["state"], w["step"], w["retries"]) == ("waiting", "verify", 1)
    w = apply_warm_event(w, {"kind": "retry", "attempt": 2, "saved_load_s": 42.5})
    w = apply_warm_event(w, {"kind": "step", "step": "stop", "state": "done"})
    assert w is not None and (w["state"], w["retries"], w["saved_load_s"]) == ("stopped", 2, 85.0)


def test_runs_without_a_kept_server_record_nothing() -> None:
    assert apply_warm_event(None, {"kind": "step", "step": "stop", "state": "done"}) is None
    assert apply_warm_event(None, {"kind": "retry", "attempt": 1}) is None
    assert apply_warm_event(None, {"kind": "step", "step": "extract", "state": "started"}) is None
