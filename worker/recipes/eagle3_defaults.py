"""The EAGLE-3 recipe's defaults: the one table both sides read. Stdlib only (imported on the host).

The recipe fills a spec.json's missing keys from it (a hand-written one runs too); the controller's job spec
(orchestrator/core/spec.py) takes its field defaults from it. The one difference is ``canary``: a spec from
``eorch launch --spec`` runs the canary unless told not to, a hand-written spec.json runs without one.
"""

from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, Any] = {
    "layer_ids": None, "legacy_output_ids": None, "tensor_parallel_size": 1, "max_model_len": 4096,
    "gpu_memory_utilization": 0.9, "hs_backend": "auto", "staging_dir": None, "concurrency": 32, "port": 8000,
    "trust_remote_code": False, "vllm_args": [], "env": {}, "vllm_python": "python3",
    "speculators_python": "python3", "serve_entrypoint": "api_server", "max_samples": None, "seq_length": None,
    "health_timeout_s": 1800.0, "stop_grace_s": 30.0, "request_timeout_s": 600.0, "server_access_log": False,
    "gpu_release_timeout_s": 30.0,
    "world_size": 1, "rank": 0, "expect_versions": {},
    "canary": False, "canary_samples": 4, "first_sample_gate": True, "keep_server": False,
    "keep_server_idle_s": 1800.0,
}

CONTROLLER_CANARY = True  # the job spec's default for ``canary``
