"""Starting a run: the remote wrapper first, then the history row, so a failed launch writes nothing."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.context import Context
from orchestrator.errors import UsageError
from orchestrator.logparse.inert import inert_line
from orchestrator.patches import prepare_launch, run_pythons
from orchestrator.runstate import RunStatus
from orchestrator.secretenv import redacted_env, split_env
from orchestrator.store.models import Run
from orchestrator.store.queries import add_event, get_host, new_run_id, utcnow

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
) -> Run:
    """Start argv detached on host; returns the recorded run (status running).

    On a Slurm host the wrapper is submitted with sbatch (the host's sbatch args, then ``sbatch_args``) and
    the run is recorded as ``launching``: the monitor moves it to ``running`` when Slurm starts the job.

    Secrets (``secret_env``, and the variables of ``env`` whose key looks like one: orchestrator.secretenv)
    reach the job but are recorded, here and on the host, only as ``<redacted>``.
    ``preflight`` is the report stored on the run; ``gpu_locks`` the GPUs the run locks on the host.
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
    public_env, secrets = split_env({**env, **(secret_env or {})}, explicit=secret_env or ())
    info = await session.call(
        "launch", run_dir=run_dir, run_id=run_id, argv=list(argv), env=public_env, secret_env=secrets, cwd=cwd,
        files=dict(files or {}), **scheduling,
    )
    env = redacted_env({**env, **(secret_env or {})}, explicit=secrets)
    status = RunStatus.LAUNCHING if slurm else RunStatus.RUNNING
    now = utcnow()
    run = Run(
        id=run_id,
        name=name or _default_name(argv),
        host=host,
        kind=kind,
        command=list(argv),
        env=dict(env),
        cwd=cwd,
        spec=spec,
        model=model,
        status=status.value,
        phase="starting",
        cancel_requested=False,
        created_at=now,
        started_at=None if slurm else now,
        remote_dir=run_dir,
        pgid=info.get("pgid"),
        proc_start_time=info.get("start_time"),
        boot_id=info.get("boot_id"),
        scheduler_job_id=info.get("job_id"),
        log_offset=0,
        events_offset=0,
        preflight={**preflight, "gpu_locks": info["gpu_locks"]} if preflight and info.get("gpu_locks") else preflight,
        **recorded,
    )
    with ctx.db() as s:
        s.add(run)
        s.flush()
        if slurm:
            add_event(s, run_id, "status", {"from": "pending", "to": "launching", "slurm_job_id": info["job_id"],
                                            "sbatch_args": all_sbatch_args})
        else:
            add_event(s, run_id, "status", {"from": "pending", "to": "running", "pid": info.get("pid")})
    return run


def _fill(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def _default_name(argv: Sequence[str]) -> str:
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    return inert_line(" ".join(words))[:60]
