"""Runs and hosts as plain dicts: the one shape behind every --json and every table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from orchestrator.canary import effective_root_cause
from orchestrator.logparse.tail import failure_evidence
from orchestrator.secretenv import redacted_env
from orchestrator.store.models import Host, Run

#: Statuses whose record carries the log's evidence (first error line, last lines).
EVIDENCE_STATUSES = frozenset({"failed", "lost"})


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
        "log_events": {k: (run.event_counts or {}).get(k, {}) for k in ("seen", "stored")},
        "last_output_at": _iso(run.last_output_at),
        "checked_at": _iso(run.checked_at),
        "root_cause": effective_root_cause(run.root_cause, run.canary),
        "command": run.command,
        "env": redacted_env(run.env),  # also for runs recorded before secrets were kept out
        "cwd": run.cwd,
        "remote_dir": run.remote_dir,
        "cancel_requested": run.cancel_requested,
        "vllm_version": run.vllm_version,
        "speculators_version": run.speculators_version,
        "patch_set": run.patch_set,
        "env_fingerprint": run.env_fingerprint,
        "preflight": run.preflight,
        "rerun_of": run.rerun_of,
        "alerts_muted_at": _iso(run.alerts_muted_at),
        "scheduler": (
            {"kind": "slurm", "job_id": run.scheduler_job_id, **(run.scheduler_state or {})}
            if run.scheduler_job_id else None
        ),
    }
    if run.kind != "command" or run.outputs:
        record["outputs"] = run.outputs
    if run.kind == "eagle3-extract":
        record["canary"] = run.canary
        record["warm_server"] = run.warm_server
    if run.status in EVIDENCE_STATUSES:
        record["evidence"] = failure_evidence(run.parser_state)
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


def env_lines(record: dict[str, Any]) -> list[str]:
    """What code a run ran (its environment fingerprint and patch set), as a few lines with rich markup.

    Shared by `eorch show`, `eorch host check --env` and the TUI's run header. Packages that are not
    installed are left out rather than printed as "None". Every value from the host is escaped: a version,
    a path or a probe error with brackets is printed as it was, never read as markup.
    """
    from rich.markup import escape

    def e(value: object) -> str:
        return escape(str(value))

    fp = record.get("env_fingerprint")
    ps = record.get("patch_set")
    lines: list[str] = []
    if fp:
        # Versions live under "versions"; the headline ones are also at the top level of a fingerprint.
        v = {**{k: fp.get(k) for k in ("torch", "vllm", "speculators")}, **(fp.get("versions") or {})}
        torch = fp.get("torch_probe") or {}
        parts = [f"Python {e(fp.get('python'))}"]
        if v.get("torch"):
            parts.append(f"torch {e(v['torch'])}" + (f" (CUDA {e(torch['cuda'])})" if torch.get("cuda") else ""))
        if v.get("vllm"):
            dist = fp.get("vllm_dist")
            parts.append(f"vllm {e(v['vllm'])}" + (f" ({e(dist)})" if dist not in (None, "vllm") else ""))
        parts += [f"{name} {e(v[name])}" for name in ("speculators", "transformers", "hs-connectors",
                                                       "compressed-tensors") if v.get(name)]
        if fp.get("error"):
            parts.append(f"probe failed: {e(fp['error'])}")
        lines.append("env: " + " · ".join(parts))
        gpus = fp.get("gpus") or []
        if fp.get("hostname"):
            lines.append(f"machine: {e(fp['hostname'])} · boot {e(str(fp.get('boot_id'))[:8])} · "
                         + (f"{len(gpus)}× {e(gpus[0])} · driver {e(fp.get('driver'))}" if gpus else "no GPUs"))
        patched = fp.get("patched_files") or {}
        drifted = [p for p, f in patched.items() if f.get("expected") and f.get("sha256") != f["expected"]]
        if patched:
            sets = ", ".join(e(s) for s in fp.get("patch_sets") or []) or "—"
            lines.append(f"patched files: {len(patched)} (sets: {sets})"
                         + (f" · [bold red]not as patched: {e(', '.join(drifted))}[/]" if drifted else ""))
    if ps:
        lines.append(f"patch set: {e(ps['name'])} ({len(ps.get('files', {}))} files, verified "
                     f"{e(ps.get('verified_at'))})")
        if ps.get("changed_since"):
            lines.append(f"[bold red]patched files changed since this run[/] (seen {e(ps['changed_since']['at'])}): "
                         + e(", ".join(ps["changed_since"]["files"])))
    return lines
