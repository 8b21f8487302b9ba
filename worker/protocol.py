"""The controller↔agent protocol: requests, replies and the reports in them, as dataclasses both sides import.

The wire is JSON lines: the controller writes ``Request.to_line()``, the agent answers each with one line,
``OkReply`` or ``ErrorReply`` (``decode_reply``). An ``ErrorReply`` says the *operation* failed, for one of
two reasons (``kind``): ``refused`` (the host cannot do what was asked: bad path, missing command) or
``crashed`` (an unexpected exception in the worker — a bug, a corrupt file on the host; ``where`` names the
line). Either way the agent keeps serving, so one bad request never looks like an unreachable host.

Stdlib only and Python 3.8+ (the worker runs on the host under ``python3 -I``): no ``slots``/``kw_only``,
no ``match``; annotations are never evaluated, so decoding is written out field by field.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Union

REFUSED = "refused"  # the operation cannot be done as asked; the message is for the user
CRASHED = "crashed"  # the worker raised something it did not expect: a bug or a corrupt file on the host


class ProtocolError(ValueError):
    """A value that is not a message of this protocol; the text names the field."""


# ---------------------------------------------------------------------------------------------- checks


def _obj(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def _str(d: dict[str, Any], key: str, what: str) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise ProtocolError(f"{what}.{key}: expected a string, got {type(value).__name__}")
    return value


def _opt_str(d: dict[str, Any], key: str, what: str) -> str | None:
    return None if d.get(key) is None else _str(d, key, what)


def _bool(d: dict[str, Any], key: str, what: str, default: bool | None = None) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise ProtocolError(f"{what}.{key}: expected true/false, got {type(value).__name__}")
    return value


def _opt_int(d: dict[str, Any], key: str, what: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{what}.{key}: expected an integer, got {type(value).__name__}")
    return value


def _opt_float(d: dict[str, Any], key: str, what: str) -> float | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError(f"{what}.{key}: expected a number, got {type(value).__name__}")
    return float(value)


def _str_list(d: dict[str, Any], key: str, what: str) -> list[str]:
    value = d.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"{what}.{key}: expected a list of strings")
    return list(value)


def _int_list(d: dict[str, Any], key: str, what: str) -> list[int]:
    value = d.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ProtocolError(f"{what}.{key}: expected a list of integers")
    return list(value)


def _str_map(d: dict[str, Any], key: str, what: str) -> dict[str, str]:
    value = d.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ProtocolError(f"{what}.{key}: expected an object of strings")
    return dict(value)


def _opt_obj(d: dict[str, Any], key: str, what: str) -> dict[str, Any] | None:
    value = d.get(key)
    return None if value is None else _obj(value, f"{what}.{key}")


# ---------------------------------------------------------------------------------------------- envelope


@dataclass(frozen=True)
class Request:
    """``{"id": N, "op": NAME, "args": {...}}``: the args are the operation's keyword arguments."""

    id: int
    op: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_line(self) -> bytes:
        return json.dumps({"id": self.id, "op": self.op, "args": self.args}).encode() + b"\n"

    @classmethod
    def from_json(cls, value: object) -> Request:
        d = _obj(value, "request")
        request_id = _opt_int(d, "id", "request")
        return cls(request_id if request_id is not None else 0, _str(d, "op", "request"),
                   _obj(d.get("args", {}), "request.args"))


@dataclass(frozen=True)
class OkReply:
    id: int | None
    result: dict[str, Any]


@dataclass(frozen=True)
class ErrorReply:
    """The operation failed; ``error`` is one line for the user, ``where`` (crashed only) the worker's line."""

    id: int | None
    error: str
    kind: str = REFUSED
    where: str = ""


Reply = Union[OkReply, ErrorReply]


def encode_reply(reply: Reply) -> str:
    if isinstance(reply, OkReply):
        return json.dumps({"id": reply.id, "ok": True, "result": reply.result})
    return json.dumps({"id": reply.id, "ok": False, "error": reply.error, "kind": reply.kind, "where": reply.where})


def decode_reply(line: bytes | str) -> Reply:
    """One reply line; ProtocolError for anything else (a worker of another version, noise on stdout)."""
    try:
        value = json.loads(line)
    except ValueError as err:
        raise ProtocolError(f"reply is not JSON: {err}") from None
    d = _obj(value, "reply")
    ok = _bool(d, "ok", "reply")
    request_id = _opt_int(d, "id", "reply")
    if ok:
        return OkReply(request_id, _obj(d.get("result"), "reply.result"))
    kind = _opt_str(d, "kind", "reply") or REFUSED
    if kind not in (REFUSED, CRASHED):
        raise ProtocolError(f"reply.kind: unknown {kind!r}")
    return ErrorReply(request_id, _str(d, "error", "reply"), kind, _opt_str(d, "where", "reply") or "")


# ---------------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class RunStatusReport:
    """What the host says about one run (``status`` / ``status_many``): the facts the monitor judges by.

    ``error`` set: this run's facts could not be read (a corrupt ``wrapper.json``, say); the other fields are
    then unknown (their defaults) and the monitor leaves the run's status as it was.
    """

    run_dir: str
    exists: bool = True
    started: bool = False
    alive: bool = False
    rc: int | None = None
    boot_changed: bool = False
    cancel_requested: bool = False
    marked_pids: list[int] = field(default_factory=list)  # a vanished run dir: what still carries its marker
    log_size: int | None = None
    log_inode: int | None = None
    events_size: int | None = None
    log_mtime: float | None = None
    events_mtime: float | None = None
    rc_mtime: float | None = None
    pending_reason: str | None = None  # Slurm: why the job is still queued
    scheduler: dict[str, Any] | None = None  # Slurm: kind, job_id, state, reason, node, error, wrapper_rc
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def unreadable(cls, run_dir: str, error: str) -> RunStatusReport:
        return cls(run_dir=run_dir, error=error)

    @classmethod
    def from_json(cls, value: object) -> RunStatusReport:
        w = "status"
        d = _obj(value, w)
        return cls(
            run_dir=_str(d, "run_dir", w), exists=_bool(d, "exists", w, True), started=_bool(d, "started", w, False),
            alive=_bool(d, "alive", w, False), rc=_opt_int(d, "rc", w), boot_changed=_bool(d, "boot_changed", w, False),
            cancel_requested=_bool(d, "cancel_requested", w, False), marked_pids=_int_list(d, "marked_pids", w),
            log_size=_opt_int(d, "log_size", w), log_inode=_opt_int(d, "log_inode", w),
            events_size=_opt_int(d, "events_size", w), log_mtime=_opt_float(d, "log_mtime", w),
            events_mtime=_opt_float(d, "events_mtime", w), rc_mtime=_opt_float(d, "rc_mtime", w),
            pending_reason=_opt_str(d, "pending_reason", w), scheduler=_opt_obj(d, "scheduler", w),
            error=_opt_str(d, "error", w),
        )


@dataclass(frozen=True)
class StatusManyReport:
    """``status_many``: one report per run directory asked, in order, with the host's boot id and clock."""

    runs: list[RunStatusReport]
    boot_id: str | None = None
    now: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"runs": [r.to_json() for r in self.runs], "boot_id": self.boot_id, "now": self.now}

    @classmethod
    def from_json(cls, value: object) -> StatusManyReport:
        d = _obj(value, "status_many")
        runs = d.get("runs")
        if not isinstance(runs, list):
            raise ProtocolError("status_many.runs: expected a list")
        return cls([RunStatusReport.from_json(r) for r in runs], _opt_str(d, "boot_id", "status_many"),
                   _opt_float(d, "now", "status_many"))


# ---------------------------------------------------------------------------------------------- launch


@dataclass(frozen=True)
class LaunchSpec:
    """``launch``: what to start on the host, in which run directory, and how (see ``worker.ops.launch``)."""

    run_dir: str
    run_id: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # written into the run directory first
    scheduler: str = "direct"  # or "slurm"
    sbatch_args: list[str] = field(default_factory=list)
    secret_env: dict[str, str] = field(default_factory=dict)  # reaches the job, never meta.json
    gpu_locks: list[int] = field(default_factory=list)
    force_locks: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: object) -> LaunchSpec:
        w = "launch"
        d = _obj(value, w)
        unknown = sorted(set(d) - set(cls.__dataclass_fields__))
        if unknown:
            raise ProtocolError(f"launch: unknown field(s) {', '.join(unknown)}")
        scheduler = _opt_str(d, "scheduler", w) or "direct"
        if scheduler not in ("direct", "slurm"):
            raise ProtocolError(f"launch.scheduler: unknown {scheduler!r}")
        return cls(
            run_dir=_str(d, "run_dir", w), run_id=_str(d, "run_id", w), argv=_str_list(d, "argv", w),
            env=_str_map(d, "env", w), cwd=_opt_str(d, "cwd", w), files=_str_map(d, "files", w),
            scheduler=scheduler, sbatch_args=_str_list(d, "sbatch_args", w),
            secret_env=_str_map(d, "secret_env", w), gpu_locks=_int_list(d, "gpu_locks", w),
            force_locks=_bool(d, "force_locks", w, False),
        )


@dataclass(frozen=True)
class LaunchReply:
    """The identity of a started run: its wrapper (direct) or its Slurm job (submitted, not yet started)."""

    run_dir: str
    log_path: str
    pid: int | None = None
    pgid: int | None = None
    start_time: int | None = None  # the wrapper's start, clock ticks since boot (against pid reuse)
    boot_id: str | None = None
    job_id: str | None = None
    scheduler: str | None = None
    subreaper: bool | None = None  # whether the wrapper could make itself its job's subreaper
    gpu_locks: dict[str, Any] | None = None  # taken / broken / skipped (worker.gpulock)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, value: object) -> LaunchReply:
        w = "launch reply"
        d = _obj(value, w)
        return cls(
            run_dir=_str(d, "run_dir", w), log_path=_str(d, "log_path", w), pid=_opt_int(d, "pid", w),
            pgid=_opt_int(d, "pgid", w), start_time=_opt_int(d, "start_time", w),
            boot_id=_opt_str(d, "boot_id", w), job_id=_opt_str(d, "job_id", w),
            scheduler=_opt_str(d, "scheduler", w), subreaper=d.get("subreaper") if isinstance(d.get("subreaper"), bool)
            else None, gpu_locks=_opt_obj(d, "gpu_locks", w),
        )
