"""Runs and hosts as plain dicts: the one shape behind every --json and every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from orchestrator.store.models import Host, Run


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None


def run_record(run: Run) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": run.id,
        "name": run.name,
        "host": run.host,
        "kind": run.kind,
        "status": run.status,
        "phase": run.phase,
        "shards": {"done": run.shards_done, "total": run.shards_total} if run.shards_total else None,
        "shards_rate": run.shards_rate,
        "shards_eta_s": run.shards_eta_s,
        "progress": (
            {"done": run.progress_done, "total": run.progress_total, "rate": run.progress_rate}
            if run.progress_total else None
        ),
        "exit_code": run.exit_code,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "ended_at": _iso(run.ended_at),
        "log_offset": run.log_offset,
        "root_cause": run.root_cause,
        "command": run.command,
        "env": run.env,
        "cwd": run.cwd,
        "remote_dir": run.remote_dir,
        "cancel_requested": run.cancel_requested,
        "vllm_version": run.vllm_version,
        "speculators_version": run.speculators_version,
        "patch_set": run.patch_set,
        "env_fingerprint": run.env_fingerprint,
        "scheduler": (
            {"kind": "slurm", "job_id": run.scheduler_job_id, **(run.scheduler_state or {})}
            if run.scheduler_job_id else None
        ),
    }
    if run.kind != "command" or run.outputs:
        record["outputs"] = run.outputs
    return record


def host_record(host: Host) -> dict[str, Any]:
    return {
        "name": host.name,
        "destination": host.destination,
        "port": host.port,
        "root": host.root,
        "python": host.python,
        "scheduler": host.scheduler or "direct",
        "sbatch_args": list(host.sbatch_args or []),
        "env": dict(host.env or {}),
        "reachable": host.reachable,
        "unreachable_since": _iso(host.unreachable_since),
        "last_error": host.last_error,
    }


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
