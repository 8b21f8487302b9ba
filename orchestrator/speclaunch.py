"""A job spec turned into launch arguments: a command as is, a recipe as eorch's own worker module."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.spec import CommandJob, Eagle3Job, load_spec, worker_payload


def spec_launch_args(
    path: Path, *, extra_env: Mapping[str, str], name: str | None, cwd: str | None
) -> dict[str, Any]:
    """Keyword arguments for ``launcher.launch`` from a validated spec file (SpecError if invalid)."""
    spec = load_spec(path)
    if isinstance(spec, CommandJob):
        return {
            "argv": list(spec.command.argv),
            "env": {**spec.command.env, **extra_env},
            "cwd": cwd or spec.command.cwd,
            "name": name or spec.name,
            "kind": "command",
            "spec": worker_payload(spec),
        }
    assert isinstance(spec, Eagle3Job)
    payload = worker_payload(spec)
    return {
        # {python}, {worker} and {run_dir} are filled in by the launcher once the host session is open.
        "argv": ["{python}", "-m", "worker.recipes.eagle3", "{run_dir}/spec.json"],
        "env": {"PYTHONPATH": "{worker}", **extra_env},
        "cwd": cwd,
        "name": name or spec.name or "eagle3-extract",
        "kind": "eagle3-extract",
        "spec": payload,
        "files": {"spec.json": json.dumps(payload, indent=2)},
        "model": spec.eagle3.model,
    }
