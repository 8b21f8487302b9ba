"""Starting a run: recorded first (``pending``), then started, then marked started — never a job the
history does not know about.

A history that cannot be written stops the launch before the host is touched. A launch the host refuses
(command not found, no such directory) removes its pending row, so bad input leaves the history as it was.
A launch cut off after that (the link dropped, the history locked) leaves the row ``pending``: the monitor
settles it from the host's facts (worker started → running; nothing there → lost).
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.actions.patches import prepare_launch, run_pythons
from orchestrator.context import Context
from orchestrator.core.launchrequest import LaunchRequest, resolve
from orchestrator.core.runstate import RunStatus
from orchestrator.core.secretenv import redacted_env, split_env
from orchestrator.errors import HistoryReadOnly, HostError, RemoteOpFailed, StoreError, UsageError
from orchestrator.logparse.inert import inert_line
from orchestrator.store import queries
from orchestrator.store.db import WriteFailed, describe_write_failure
from orchestrator.store.models import Run
from orchestrator.store.queries import get_host, new_run_id, propose_status, utcnow
from worker.protocol import LaunchReply, LaunchSpec


async def launch(ctx: Context, host: str, request: LaunchRequest) -> Run:
    """Start the request's program detached on host; returns the recorded run (status running).

    Raises ``StoreError`` (one line) when the history cannot be written, saying whether anything started.

    On a Slurm host the wrapper is submitted with sbatch (the host's sbatch args, then the request's) and
    the run is recorded as ``launching``: the monitor moves it to ``running`` when Slurm starts the job.

    Secrets (``secret_env``, and the variables of ``env`` whose key looks like one: orchestrator.core.secretenv)
    reach the job but are recorded, here and on the host, only as ``<redacted>``.
    ``rerun_of``: the run this one repeats (orchestrator.actions.rerun).
    """
    name, cwd, spec, sbatch_args = request.name, request.cwd, request.spec, request.sbatch_args
    if isinstance(request.program, tuple) and not request.program:
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
    argv, program_env = resolve(request.program, host_python=session.python, worker_dir=session.worker_dir,
                                run_dir=run_dir)
    env = {**program_env, **request.env}
    # What code the run will run (orchestrator.actions.patches): patch set verified or applied, env fingerprinted.
    recorded = await prepare_launch(ctx, host, run_pythons(argv, spec, request.python, session.python),
                                    request.patch, request.apply_patches)
    secret_env = dict(request.secret_env)
    # Secrets reach the job through the host's launch op only; the history and the host's meta.json keep names.
    public_env, secrets = split_env({**env, **secret_env}, explicit=secret_env)
    recorded_env = redacted_env({**env, **secret_env}, explicit=secrets)
    launch_spec = LaunchSpec(
        run_dir=run_dir, run_id=run_id, argv=argv, env=public_env, cwd=cwd, files=dict(request.files),
        secret_env=secrets, scheduler="slurm" if slurm else "direct", sbatch_args=all_sbatch_args if slurm else [],
        gpu_locks=[] if slurm else list(request.gpu_locks), force_locks=request.force_locks and not slurm,
    )
    run = Run(
        id=run_id,
        name=name or _default_name(argv),
        host=host,
        kind=request.kind,
        command=list(argv),
        env=dict(recorded_env),
        cwd=cwd,
        spec=spec,
        model=request.model,
        status=RunStatus.PENDING.value,
        phase="starting",
        cancel_requested=False,
        created_at=utcnow(),
        remote_dir=run_dir,
        log_offset=0,
        events_offset=0,
        preflight=request.preflight,
        rerun_of=request.rerun_of,
        **recorded,
    )
    # Recorded before anything starts: a history that cannot be written stops the launch here.
    try:
        with ctx.db() as s:
            queries.add_run(s, run)
    except (WriteFailed, HistoryReadOnly) as err:
        raise StoreError(f"cannot record the run: {describe_write_failure(err)}; nothing was started on {host}") \
            from err
    try:
        info = await session.launch(launch_spec)
    except RemoteOpFailed:
        _forget(ctx, run_id)  # the host refused before starting anything: the history is as it was
        raise
    except HostError as err:
        raise HostError(host, f"{err}; whether run {run_id} started is unknown: it is recorded as pending, "
                              f"`eorch watch {run_id}` finds out, `eorch cancel {run_id}` stops it") from err
    try:
        return _record_started(ctx, run_id, info, slurm, all_sbatch_args)
    except (WriteFailed, HistoryReadOnly) as err:
        raise StoreError(f"run {run_id} started on {host} but {describe_write_failure(err)}: it stays pending "
                         f"in the history; `eorch watch {run_id}` records it from the host") from err


def _record_started(ctx: Context, run_id: str, info: LaunchReply, slurm: bool, sbatch_args: list[str]) -> Run:
    """pending → launching (Slurm: submitted) or running (the wrapper is up), with the process identity."""
    with ctx.db() as s:
        run = queries.run_row(s, run_id)
        if run is None:
            raise StoreError(f"run {run_id} vanished from the history during its launch")
        run.pgid, run.proc_start_time = info.pgid, info.start_time
        run.boot_id, run.scheduler_job_id = info.boot_id, info.job_id
        if run.preflight and info.gpu_locks:
            run.preflight = {**run.preflight, "gpu_locks": info.gpu_locks}
        if slurm:
            propose_status(s, run, RunStatus.LAUNCHING, slurm_job_id=info.job_id, sbatch_args=sbatch_args)
        else:
            propose_status(s, run, RunStatus.RUNNING, pid=info.pid)
    return run


def _forget(ctx: Context, run_id: str) -> None:
    """Drop the pending row of a launch the host refused (it stays pending if the history is not writable:
    the monitor then records it as lost, the launch never having reached the host)."""
    try:
        with ctx.db() as s:
            queries.remove_run(s, run_id)
    except (WriteFailed, HistoryReadOnly):
        pass


def _default_name(argv: Sequence[str]) -> str:
    words = [a.rsplit("/", 1)[-1] for a in argv[:3]]
    return inert_line(" ".join(words))[:60]
