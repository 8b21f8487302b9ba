"""Starting a run: recorded first (``pending``), then started, then marked started — never a job the
history does not know about.

A history that cannot be written stops the launch before the host is touched. A launch the host refuses
(command not found, no such directory) removes its pending row, so bad input leaves the history as it was.
A launch cut off after that (the link dropped, the history locked) leaves the row ``pending``: the monitor
settles it from the host's facts (worker started → running; nothing there → lost).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import SQLAlchemyError

from orchestrator.context import Context
from orchestrator.errors import HistoryReadOnly, HostError, RemoteOpFailed, StoreError, UsageError
from orchestrator.logparse.inert import inert_line
from orchestrator.patches import prepare_launch, run_pythons
from orchestrator.runstate import RunStatus
from orchestrator.secretenv import redacted_env, split_env
from orchestrator.store.db import describe_write_failure
from orchestrator.store.models import Event, Run
from orchestrator.store.queries import get_host, new_run_id, propose_status, utcnow

ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env(pairs: Sequence[str], option: str = "--env") -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not ENV_KEY_RE.match(key):
            raise UsageError(f"bad {option} {key!r}: expected KEY=VALUE with KEY like MY_VAR")  # no value: a secret
        env[key] = value
    return env


async def launch(
    ctx: Context,
    host: str,
    argv: Sequence[str],
    *,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    kind: str = "command",
    spec: dict[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
    model: str | None = None,
    python: str | None = None,
    patch: str | None = None,
    apply_patches: bool = False,
    sbatch_args: Sequence[str] = (),
    secret_env: Mapping[str, str] | None = None,
    preflight: dict[str, Any] | None = None,
    gpu_locks: Sequence[int] = (),
    force_locks: bool = False,
    rerun_of: str | None = None,
) -> Run:
    """Start argv detached on host; returns the recorded run (status running).

    Raises ``StoreError`` (one line) when the history cannot be written, saying whether anything started.

    On a Slurm host the wrapper is submitted with sbatch (the host's sbatch args, then ``sbatch_args``) and
    the run is recorded as ``launching``: the monitor moves it to ``running`` when Slurm starts the job.

    Secrets (``secret_env``, and the variables of ``env`` whose key looks like one: orchestrator.secretenv)
    reach the job but are recorded, here and on the host, only as ``<redacted>``.
    ``preflight`` is the report stored on the run; ``gpu_locks`` the GPUs the run locks on the host;
    ``rerun_of`` the run this one repeats (orchestrator.rerun).
    """
    if not argv:
        raise UsageError("no command given: put it after `--`, e.g. eorch launch --host H -- python train.py")
    if name is not None and inert_line(name) != name:
        raise UsageError("the run name has control characters or escape sequences; give a --name of plain text")
    with ctx.db() as s:
        host_row = get_host(s, host)  # unknown host: clear error before any connection
        slurm = host_row.scheduler == "slurm"
        all_sbatch_args = [*(host_row.sbatch_args or []), *sbatch_args]
    if sbatch_args and not slurm:
        raise UsageError(f"--sbatch-arg needs a Slurm host; {host!r} runs jobs directly")
    session = await ctx.session(host)
    run_id = new_run_id()
    run_dir = session.run_dir(run_id)
    fill = {"{worker}": session.worker_dir, "{run_dir}": run_dir, "{python}": session.python}
    argv = [_fill(a, fill) for a in argv] if kind != "command" else list(argv)
    env = {k: _fill(v, fill) for k, v in (env or {}).items()} if kind != "command" else dict(env or {})
    # What code the run will run (orchestrator.patches): patch set verified or applied, env fingerprinted.
    recorded = await prepare_launch(ctx, host, run_pythons(argv, spec, python, session.python), patch, apply_patches)
    scheduling: dict[str, Any] = {"scheduler": "slurm", "sbatch_args": all_sbatch_args} if slurm else {}
    if gpu_locks and not slurm:
        scheduling.update(gpu_locks=list(gpu_locks), force_locks=force_locks)
    # Secrets reach the job through the host's launch op only; the history and the host's meta.json keep names.
    public_env, secrets = split_env({**env, **(secret_env or {})}, explicit=secret_env or ())
    recorded_env = redacted_env({**env, **(secret_env or {})}, explicit=secrets)
    run = Run(
        id=run_id,
        name=name or _default_name(argv),
        host=host,
        kind=kind,
        command=list(argv),
        env=dict(recorded_env),
        cwd=cwd,
        spec=spec,
        model=model,
        status=RunStatus.PENDING.value,
        phase="starting",
        cancel_requested=False,
        created_at=utcnow(),
        remote_dir=run_dir,
        log_offset=0,
        events_offset=0,
        preflight=preflight,
        rerun_of=rerun_of,
        **recorded,
    )
    # Recorded before anything starts: a history that cannot be written stops the launch here.
    try:
        with ctx.db() as s:
            s.add(run)
    except (SQLAlchemyError, HistoryReadOnly) as err:
        raise StoreError(f"cannot record the run: {describe_write_failure(err)}; nothing was started on {host}") \
            from err
    try:
        info = await session.call(
            "launch", run_dir=run_dir, run_id=run_id, argv=list(argv), env=public_env, secret_env=secrets, cwd=cwd,
            files=dict(files or {}), **scheduling,
        )
    except RemoteOpFailed:
        _forget(ctx, run_id)  # the host refused before starting anything: the history is as it was
        raise
    except HostError as err:
        raise HostError(host, f"{err}; whether run {run_id} started is unknown: it is recorded as pending, "
                              f"`eorch watch {run_id}` finds out, `eorch cancel {run_id}` stops it") from err
    try:
        return _record_started(ctx, run_id, info, slurm, all_sbatch_args)
    except (SQLAlchemyError, HistoryReadOnly) as err:
        raise StoreError(f"run {run_id} started on {host} but {describe_write_failure(err)}: it stays pending "
                         f"in the history; `eorch watch {run_id}` records it from the host") from err


def _record_started(ctx: Context, run_id: str, info: dict[str, Any], slurm: bool, sbatch_args: list[str]) -> Run:
    """pending → launching (Slurm: submitted) or running (the wrapper is up), with the process identity."""
    with ctx.db() as s:
        run = s.get(Run, run_id)
        if run is None:
            raise StoreError(f"run {run_id} vanished from the history during its launch")
        run.pgid, run.proc_start_time = info.get("pgid"), info.get("start_time")
        run.boot_id, run.scheduler_job_id = info.get("boot_id"), info.get("job_id")
        if run.preflight and info.get("gpu_locks"):
            run.preflight = {**run.preflight, "gpu_locks": info["gpu_locks"]}
        if slurm:
            propose_status(s, run, RunStatus.LAUNCHING, slurm_job_id=info["job_id"], sbatch_args=sbatch_args)
        else:
            propose_status(s, run, RunStatus.RUNNING, pid=info.get("pid"))
    return run


def _forget(ctx: Context, run_id: str) -> None:
    """Drop the pending row of a launch the host refused (it stays pending if the history is not writable:
    the monitor then records it as lost, the launch never having reached the host)."""
    try:
        with ctx.db() as s:
            s.execute(delete(Event).where(Event.run_id == run_id))
            s.execute(delete(Run).where(Run.id == run_id))
    except SQLAlchemyError:
        pass


def _fill(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def _default_name(argv: Sequence[str]) -> str:
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    return inert_line(" ".join(words))[:60]
