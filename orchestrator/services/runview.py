"""One run as every reader sees it: a frozen `RunView`, built from the history's row in one place (`view_of`).

`eorch runs`, `eorch show`, `--json`, `eorch similar|search|export` and the TUI's list and detail all read a
run through this one shape; `record()` is its `--json` form (the keys the tests and scripts rely on), and
`history_record()` adds the history's columns. No ORM row leaves the service layer: a view holds copies of
the row's values, so it outlives its session and can be posted from a thread worker.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.alerts.rules import RunSnapshot
from orchestrator.core.canary import effective_root_cause
from orchestrator.core.humanize import iso
from orchestrator.core.runstate import RunStatus, shown_phase
from orchestrator.core.secretenv import redacted_env
from orchestrator.logparse.runs import earlier_runs, lines_before
from orchestrator.logparse.tail import failure_evidence

if TYPE_CHECKING:
    from orchestrator.store.models import Run

#: Statuses whose view carries the log's evidence (first error line, last lines).
EVIDENCE_STATUSES = frozenset({"failed", "lost"})


@dataclass(frozen=True, slots=True)
class RunView:
    """A run: what it ran, where, how far it got, how it ended, and what code it ran.

    The first six fields are what a row of the runs table needs, so a screen test can build one by hand.
    ``stale_note`` ("as of 08:22, no monitor running; gpu unreachable") is filled in by the service when the
    status could not be confirmed since (`orchestrator.core.freshness.status_note`).
    """

    id: str
    name: str
    host: str
    status: str
    phase: str
    created_at: datetime
    kind: str = "command"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    shards_done: int | None = None
    shards_total: int | None = None
    shards_rate: float | None = None
    shards_eta_s: float | None = None
    progress_done: int | None = None
    progress_total: int | None = None
    progress_rate: float | None = None
    log_offset: int = 0
    event_counts: dict[str, Any] | None = None
    last_output_at: datetime | None = None
    checked_at: datetime | None = None
    root_cause: dict[str, Any] | None = None
    canary: dict[str, Any] | None = None
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # secrets redacted
    cwd: str | None = None
    remote_dir: str | None = None
    cancel_requested: bool = False
    model: str | None = None
    signature: str | None = None
    exception: str | None = None
    fingerprint: str | None = None
    vllm_version: str | None = None
    speculators_version: str | None = None
    patch_set: dict[str, Any] | None = None
    env_fingerprint: dict[str, Any] | None = None
    preflight: dict[str, Any] | None = None
    rerun_of: str | None = None
    alerts_muted_at: datetime | None = None
    scheduler_job_id: str | None = None
    scheduler_state: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    warm_server: dict[str, Any] | None = None
    evidence: dict[str, Any] | None = None  # a failure's first error line and log tail (EVIDENCE_STATUSES)
    earlier_runs: tuple[dict[str, Any], ...] = ()  # runs before the last in a log of several (vLLM restarted)
    stall_minutes: float | None = None  # the spec's own stall threshold, if it sets one
    stale_note: str = ""

    # ------------------------------------------------------------------------------------ derived values

    @property
    def terminal(self) -> bool:
        return RunStatus(self.status).is_terminal()

    @property
    def shown_phase(self) -> str:
        """The phase worth showing next to the status (`runstate.shown_phase`); "" when none is."""
        return shown_phase(self.status, self.phase, self.kind) or ""

    @property
    def cause(self) -> str:
        """What the run failed of, in a word: its signature, else its exception."""
        return str(self.signature or self.exception or (self.root_cause or {}).get("exception") or "")

    @property
    def slurm(self) -> dict[str, Any]:
        """What squeue said last (state, pending reason, node); empty for a run not under Slurm."""
        return self.scheduler_state or {}

    @property
    def slurm_job(self) -> str:
        return self.scheduler_job_id or ""

    @property
    def slurm_state(self) -> str:
        return str(self.slurm.get("state") or "")

    @property
    def slurm_reason(self) -> str:
        return str(self.slurm.get("reason") or "")

    @property
    def slurm_node(self) -> str:
        return str(self.slurm.get("node") or "")

    @property
    def log_path(self) -> str | None:
        return f"{self.remote_dir}/log" if self.remote_dir else None

    def matches(self, text: str) -> bool:
        """Case-insensitive substring match over what the runs table shows."""
        needle = text.strip().lower()
        if not needle:
            return True
        hay = f"{self.id} {self.name} {self.host} {self.status} {self.phase} {self.cause} {self.slurm_job}".lower()
        return all(word in hay for word in needle.split())

    # -------------------------------------------------------------------------------------- --json forms

    def record(self) -> dict[str, Any]:
        """The run as `--json` prints it (`eorch show`, `eorch runs`, `eorch launch`)."""
        record: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "host": self.host,
            "kind": self.kind,
            "status": self.status,
            "phase": self.phase,
            "shards": {"done": self.shards_done, "total": self.shards_total} if self.shards_total else None,
            "shards_rate": self.shards_rate,
            "shards_eta_s": self.shards_eta_s,
            "progress": (
                {"done": self.progress_done, "total": self.progress_total, "rate": self.progress_rate}
                if self.progress_total else None
            ),
            "exit_code": self.exit_code,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "ended_at": iso(self.ended_at),
            "log_offset": self.log_offset,
            "log_events": {k: (self.event_counts or {}).get(k, {}) for k in ("seen", "stored")},
            "last_output_at": iso(self.last_output_at),
            "checked_at": iso(self.checked_at),
            "root_cause": effective_root_cause(_copy(self.root_cause), _copy(self.canary)),
            "command": list(self.command),
            "env": dict(self.env),
            "cwd": self.cwd,
            "remote_dir": self.remote_dir,
            "cancel_requested": self.cancel_requested,
            "vllm_version": self.vllm_version,
            "speculators_version": self.speculators_version,
            "patch_set": _copy(self.patch_set),
            "env_fingerprint": _copy(self.env_fingerprint),
            "preflight": _copy(self.preflight),
            "rerun_of": self.rerun_of,
            "alerts_muted_at": iso(self.alerts_muted_at),
            "scheduler": (
                {"kind": "slurm", "job_id": self.scheduler_job_id, **self.slurm}
                if self.scheduler_job_id else None
            ),
        }
        if self.kind != "command" or self.outputs:
            record["outputs"] = _copy(self.outputs)
        if self.kind == "eagle3-extract":
            record["canary"] = _copy(self.canary)
            record["warm_server"] = _copy(self.warm_server)
        if self.status in EVIDENCE_STATUSES:
            record["evidence"] = _copy(self.evidence)
        if self.earlier_runs:
            record["earlier_runs"] = _copy(list(self.earlier_runs))
        return record

    def history_record(self) -> dict[str, Any]:
        """`record()` plus the history's columns (signature, exception, fingerprint, model, versions)."""
        record = self.record()
        record.update(model=self.model, signature=self.signature, exception=self.exception,
                      fingerprint=self.fingerprint, vllm_version=self.vllm_version,
                      speculators_version=self.speculators_version)
        return record


    def freshness(self) -> dict[str, Any]:
        """{"current": bool, "note": "as of 08:22, no monitor running; gpu unreachable: …"}: what `--json` says
        of whether the status is current (`orchestrator.core.freshness.status_note`)."""
        return {"current": not self.stale_note, "note": self.stale_note}

    def snapshot(self, *, last_activity_at: datetime | None, default_stall_minutes: float) -> RunSnapshot:
        """What the alert rules judge this run by (`alertrules.RunSnapshot`), built here and nowhere else."""
        # the catalogue is loaded for the alert rules, not for a listing
        from orchestrator.logparse import signature_hint

        cause = self.root_cause or None
        signature = (cause or {}).get("signature") or self.signature
        return RunSnapshot(
            run_id=self.id, name=self.name, host=self.host, status=self.status, phase=self.phase, kind=self.kind,
            shards_done=self.shards_done, shards_total=self.shards_total, exit_code=self.exit_code,
            root_cause=cause, hint=signature_hint(signature) if signature else None, started_at=self.started_at,
            last_activity_at=last_activity_at, stall_minutes=self.stall_minutes or default_stall_minutes,
            muted=self.alerts_muted_at is not None,
        )


def _copy(value: Any) -> Any:
    return copy.deepcopy(value)


def view_of(run: Run, stale_note: str = "") -> RunView:
    """The view of a history row: the one place a run's columns are read for showing."""
    return RunView(
        id=run.id, name=run.name, host=run.host, status=run.status, phase=run.phase, created_at=run.created_at,
        kind=run.kind, started_at=run.started_at, ended_at=run.ended_at, exit_code=run.exit_code,
        shards_done=run.shards_done, shards_total=run.shards_total, shards_rate=run.shards_rate,
        shards_eta_s=run.shards_eta_s, progress_done=run.progress_done, progress_total=run.progress_total,
        progress_rate=run.progress_rate, log_offset=run.log_offset or 0, event_counts=_copy(run.event_counts),
        last_output_at=run.last_output_at, checked_at=run.checked_at, root_cause=_copy(run.root_cause),
        canary=_copy(run.canary), command=tuple(run.command or ()),
        env=redacted_env(run.env),  # also for runs recorded before secrets were kept out
        cwd=run.cwd, remote_dir=run.remote_dir, cancel_requested=bool(run.cancel_requested), model=run.model,
        signature=run.signature, exception=run.exception, fingerprint=run.fingerprint,
        vllm_version=run.vllm_version, speculators_version=run.speculators_version,
        patch_set=_copy(run.patch_set), env_fingerprint=_copy(run.env_fingerprint), preflight=_copy(run.preflight),
        rerun_of=run.rerun_of, alerts_muted_at=run.alerts_muted_at,
        scheduler_job_id=run.scheduler_job_id, scheduler_state=_copy(run.scheduler_state),
        outputs=_copy(run.outputs), warm_server=_copy(run.warm_server),
        evidence=(failure_evidence(run.parser_state, lines_before(run.parser_state))
                  if run.status in EVIDENCE_STATUSES else None),
        earlier_runs=tuple(earlier_runs(run.parser_state)),
        stall_minutes=_stall_minutes(run.spec), stale_note=stale_note,
    )


def _stall_minutes(spec: Any) -> float | None:
    stall = spec.get("stall_minutes") if isinstance(spec, dict) else None
    return float(stall) if stall else None
