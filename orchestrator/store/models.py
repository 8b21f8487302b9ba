"""The history schema. Changed only together with a migration in migrations/versions/."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Host(Base):
    __tablename__ = "hosts"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    destination: Mapped[str] = mapped_column(String(255))
    port: Mapped[int | None] = mapped_column(Integer)
    root: Mapped[str] = mapped_column(String(1024))
    python: Mapped[str] = mapped_column(String(255), default="python3")
    created_at: Mapped[datetime] = mapped_column(DateTime)
    reachable: Mapped[bool | None] = mapped_column()
    unreachable_since: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    facts: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # How runs start on this host: "direct" (the detached wrapper) or "slurm" (sbatch from a login node),
    # default sbatch options, and environment for every worker operation (e.g. SLURM_CONF).
    scheduler: Mapped[str] = mapped_column(String(16), default="direct", server_default="direct")
    sbatch_args: Mapped[list | None] = mapped_column(JSON)  # type: ignore[type-arg]
    env: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    host: Mapped[str] = mapped_column(ForeignKey("hosts.name", ondelete="RESTRICT"))
    kind: Mapped[str] = mapped_column(String(32), default="command")
    command: Mapped[list] = mapped_column(JSON)  # type: ignore[type-arg]
    env: Mapped[dict] = mapped_column(JSON)  # type: ignore[type-arg]
    cwd: Mapped[str | None] = mapped_column(String(1024))
    spec: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    model: Mapped[str | None] = mapped_column(String(1024))

    status: Mapped[str] = mapped_column(String(16), index=True)
    phase: Mapped[str] = mapped_column(String(16), default="starting")
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime)

    remote_dir: Mapped[str | None] = mapped_column(String(1024))
    pgid: Mapped[int | None] = mapped_column(Integer)
    proc_start_time: Mapped[int | None] = mapped_column(BigInteger)
    boot_id: Mapped[str | None] = mapped_column(String(64))
    # Slurm runs: the job id, and the last state/reason/node squeue reported ({"state", "reason", "node"}).
    scheduler_job_id: Mapped[str | None] = mapped_column(String(64))
    scheduler_state: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]

    # Following: the log bytes consumed up to the last line end, and the parser state at that point.
    log_offset: Mapped[int] = mapped_column(BigInteger, default=0)
    log_inode: Mapped[int | None] = mapped_column(BigInteger)
    parser_state: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    events_offset: Mapped[int] = mapped_column(BigInteger, default=0)
    # When the job last wrote its log or step events (from the files' mtimes on the host, in our clock), and
    # when its liveness was last confirmed there: the stall clock and the "as of" of the status.
    last_output_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Log events seen / stored per budgeted kind (orchestrator.core.eventbudget), committed with log_offset.
    event_counts: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    checked_at: Mapped[datetime | None] = mapped_column(DateTime)

    shards_done: Mapped[int | None] = mapped_column(Integer)
    shards_total: Mapped[int | None] = mapped_column(Integer)
    shards_rate: Mapped[float | None] = mapped_column(Float)
    shards_eta_s: Mapped[float | None] = mapped_column(Float)
    progress_done: Mapped[int | None] = mapped_column(Integer)
    progress_total: Mapped[int | None] = mapped_column(Integer)
    progress_rate: Mapped[float | None] = mapped_column(Float)

    root_cause: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    signature: Mapped[str | None] = mapped_column(String(64), index=True)
    exception: Mapped[str | None] = mapped_column(String(255), index=True)
    outputs: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # eagle3-extract: the canary's verdict (orchestrator.core.canary.canary_record)
    canary: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # eagle3-extract with keep_server: the kept server, its retries and the load time they saved
    warm_server: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # Normalised root cause (exception + masked message + innermost frames), for `eorch similar`.
    fingerprint: Mapped[str | None] = mapped_column(String(64), index=True)

    # What code the run ran: interpreter/library versions, GPUs, patched-file hashes; the patch set.
    env_fingerprint: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    vllm_version: Mapped[str | None] = mapped_column(String(64), index=True)
    speculators_version: Mapped[str | None] = mapped_column(String(64))
    patch_set: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # The preflight report of the launch (orchestrator.preflight.Report.to_dict), if one ran.
    preflight: Mapped[dict | None] = mapped_column(JSON)  # type: ignore[type-arg]
    # `eorch rerun`: the run this one repeats (a plain id: the rerun outlives its original's deletion).
    rerun_of: Mapped[str | None] = mapped_column(String(32))
    # `eorch alerts mute`: since when the monitor raises no alert for this run (None: alerts on).
    alerts_muted_at: Mapped[datetime | None] = mapped_column(DateTime)

    __table_args__ = (Index("ix_runs_host_created", "host", "created_at"),)


class Event(Base):
    """Append-only facts about a run: parsed log events, step events, status changes."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    ts: Mapped[datetime] = mapped_column(DateTime)
    kind: Mapped[str] = mapped_column(String(32))
    line_no: Mapped[int | None] = mapped_column(Integer)
    data: Mapped[dict] = mapped_column(JSON)  # type: ignore[type-arg]

    __table_args__ = (Index("ix_events_run_id_id", "run_id", "id"),)


class Alert(Base):
    """An alert raised once per (run, kind) — or per (host, kind) for reachability; its deliveries are rows of
    ``alert_deliveries``, one per channel."""

    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dedup_key: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    host: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    title: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)


class AlertDelivery(Base):
    """The outbox: one alert's delivery to one channel, recorded ``pending`` together with the alert, before
    anything is sent; then ``sent``, ``failed`` (retries used up) or ``expired`` (still pending when a monitor
    started after the re-send window). Never a URL: the redacted channel name and a hash of the URL."""

    __tablename__ = "alert_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    channel: Mapped[str] = mapped_column(String(255))  # redact_url() form, or "notify-send"
    channel_key: Mapped[str] = mapped_column(String(64))  # "url:" + sha256(url)[:16], "notify-send", "legacy:N"
    state: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)

    __table_args__ = (UniqueConstraint("alert_id", "channel_key"),)


class PatchAction(Base):
    """Every patch check/apply/revert on a host, with the hashes it saw."""

    __tablename__ = "patch_actions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    host: Mapped[str] = mapped_column(String(64))
    python: Mapped[str] = mapped_column(String(1024))
    patch_set: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(16))
    ok: Mapped[bool] = mapped_column()
    details: Mapped[dict] = mapped_column(JSON)  # type: ignore[type-arg]
