"""`eorch launch|runs|show|logs|cancel`."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from orchestrator.cli.common import check_limit, console, context, err_console, print_json, run_async
from orchestrator.cli.current import refreshed
from orchestrator.context import Context
from orchestrator.core import commands
from orchestrator.core.runstate import STATUSES
from orchestrator.errors import NotFound, PreflightRefused, UsageError
from orchestrator.monitoring.autostart import Following, ensure_followed
from orchestrator.services import hosts as host_service
from orchestrator.services import runs as run_service
from orchestrator.services.runview import RunView


def launch(
    ctx_: typer.Context,
    host: Annotated[list[str], typer.Option(
        "--host", "-H", help="host name (see `eorch host list`); several split an eagle3-extract spec's dataset, "
        "one rank per host")] = [],  # noqa: B006
    name: Annotated[str | None, typer.Option(help="a name for the run")] = None,
    env: Annotated[list[str], typer.Option("--env", "-e", help="KEY=VALUE for the job (repeatable); a KEY with "
                                           "TOKEN, KEY, SECRET or PASSWORD in it is a secret")] = [],  # noqa: B006
    secret_env: Annotated[list[str], typer.Option(
        "--secret-env", help="KEY=VALUE for the job that is never recorded or printed (repeatable)")] = [],  # noqa: B006
    cwd: Annotated[str | None, typer.Option(help="working directory on the host")] = None,
    spec: Annotated[Path | None, typer.Option(help="a job spec TOML file instead of a command")] = None,
    set_: Annotated[list[str], typer.Option(
        "--set", help="override a spec key: KEY.PATH=VALUE with a TOML value, e.g. --set eagle3.port=8001 "
        "(repeatable)")] = [],  # noqa: B006
    python: Annotated[str | None, typer.Option(help="the interpreter the job uses (fingerprinted, patched)")] = None,
    patch: Annotated[str | None, typer.Option(help="patch set that must be applied for --python first")] = None,
    apply_patches: Annotated[bool, typer.Option("--apply-patches", help="apply --patch if not applied")] = False,
    sbatch_arg: Annotated[list[str], typer.Option(
        "--sbatch-arg", help="extra sbatch option for this run on a slurm host, e.g. --sbatch-arg=--gres=gpu:8 "
        "(repeatable; after the host's)")] = [],  # noqa: B006
    no_preflight: Annotated[bool, typer.Option("--no-preflight", help="skip the preflight checks of an "
                                               "eagle3-extract spec")] = False,
    force: Annotated[bool, typer.Option("--force", help="launch even when a preflight check fails (the report "
                                        "is kept on the run)")] = False,
    keep_server: Annotated[bool, typer.Option(
        "--keep-server", help="eagle3-extract: a client-side failure keeps the loaded server for `eorch retry` "
        "(stopped by `eorch cancel` or the spec's keep_server_idle_s)")] = False,
    canary: Annotated[bool | None, typer.Option(
        "--canary/--no-canary", help="eagle3-extract: first run the recipe on a shrunken copy of the model and "
        "start the full run only if it succeeds (default: the spec's eagle3.canary, on)")] = None,
    no_monitor: Annotated[bool, typer.Option("--no-monitor", help="do not start a background monitor when none "
                                             "is running (then nothing records the end or alerts)")] = False,
    json_: Annotated[bool, typer.Option("--json", help="print the run record as JSON")] = False,
) -> None:
    """Start a command (after `--`) or a job spec detached on a host; returns at once with the run id.

    An eagle3-extract spec is checked first (`eorch preflight`): a failed check refuses the launch.

    The run is followed: by the running monitor, or by a background one started now (`--no-monitor`, or
    `[monitor] auto_start = false` in config.toml, opts out)."""
    from orchestrator.core.launchrequest import LaunchRequest, parse_env
    from orchestrator.services import launches  # imported here: `eorch runs` starts faster

    argv = list(ctx_.args)
    if argv and argv[0].startswith("-"):  # a mistyped option of ours must not become the remote command
        raise UsageError(f"no such option {argv[0]!r} (see eorch launch --help); the command goes after `--`, "
                         "e.g. eorch launch --host H -- python train.py")
    hosts = host or ["local"]
    if set_ and spec is None:
        raise UsageError("--set overrides keys of a --spec file; give --spec")
    if keep_server:
        if spec is None:
            raise UsageError("--keep-server applies to an eagle3-extract --spec, not to a command")
        set_ = [*set_, "eagle3.keep_server=true"]
    if len(hosts) > 1:
        if spec is None or argv:
            raise UsageError("several --host split an eagle3-extract --spec across hosts; a command runs on one")
        _launch_split(spec, hosts, set_, name=name, env=env, cwd=cwd, python=python, patch=patch,
                      apply_patches=apply_patches, sbatch_args=tuple(sbatch_arg), json_=json_,
                      secret_env=parse_env(secret_env, option="--secret-env"), checks=not no_preflight,
                      force=force, canary=canary, no_monitor=no_monitor)
        return
    if spec is not None:
        if argv:
            raise UsageError("give either --spec or a command after `--`, not both")
        from orchestrator.actions.speclaunch import spec_launch_request

        request = replace(spec_launch_request(spec, extra_env=parse_env(env), name=name, cwd=cwd, overrides=set_,
                                              canary=canary),
                          python=python, patch=patch, apply_patches=apply_patches, sbatch_args=tuple(sbatch_arg),
                          secret_env=parse_env(secret_env, option="--secret-env"))
        if request.kind == "eagle3-extract" and not no_preflight:
            from orchestrator.cli.preflight import launch_checked

            run_id = launch_checked(hosts[0], request, force=force, json_=json_)
        else:
            run_id = run_async(lambda ctx: launches.launch(ctx, hosts[0], request)).id
    else:
        if canary is not None:
            raise UsageError("--canary/--no-canary apply to an eagle3-extract --spec, not to a command")
        command = LaunchRequest.command(argv, name=name, env=parse_env(env), cwd=cwd, python=python, patch=patch,
                                        apply_patches=apply_patches, sbatch_args=tuple(sbatch_arg),
                                        secret_env=parse_env(secret_env, option="--secret-env"))
        run_id = run_async(lambda ctx: launches.launch(ctx, hosts[0], command)).id
    ctx = context()
    run = run_service.get(ctx, run_id)
    following = ensure_followed(ctx.settings, opt_out=no_monitor)
    if json_:
        print_json({**run.record(), "monitor": following.as_json()})
    else:
        _say_launched(run)
        _say_following(following)
        console.print(f"watch it: eorch watch {run.id}    logs: eorch logs {run.id} -f")


def _say_following(following: Following) -> None:
    console.print(following.detail, style="yellow" if following.state == "none" else "dim", highlight=False,
                  markup=False)


def _say_launched(run: RunView) -> None:
    slurm = f" as Slurm job {run.scheduler_job_id} (launching until it starts)" if run.scheduler_job_id else ""
    console.print(f"launched run [bold]{run.id}[/] ({escape(run.name)}) on {escape(run.host)}{slurm}")


def _launch_split(spec: Path, hosts: list[str], overrides: list[str], *, name: str | None, env: list[str],
                  cwd: str | None, json_: bool, checks: bool, force: bool, canary: bool | None = None,
                  no_monitor: bool = False,
                  **common: object) -> None:
    """One run per host, rank i of len(hosts); all specs and hosts (and their preflights) are checked before the
    first starts."""
    from orchestrator.actions.speclaunch import split_launch_requests
    from orchestrator.core.launchrequest import parse_env
    from orchestrator.services import launches  # imported here: `eorch runs` starts faster

    plans = split_launch_requests(spec, hosts, extra_env=parse_env(env), name=name, cwd=cwd, overrides=overrides,
                              canary=canary)
    ctx = context()
    host_service.require(ctx, hosts)  # NotFound, before anything starts
    started: list[str] = []

    async def go(c: Context) -> list[str]:
        requests = {h: replace(request, **common) for h, request in plans}  # type: ignore[arg-type]
        if checks:  # every host checked before the first starts
            for h, request in list(requests.items()):
                requests[h] = await launches.checked_request(c, h, request, force=force)
        for h, request in requests.items():
            try:
                started.append((await launches.launch(c, h, request)).id)
            except Exception:
                if started:
                    console.print(f"[yellow]launched before the failure: {' '.join(started)} "
                                  f"(cancel them with eorch cancel ID)[/]")
                raise
        return started

    try:
        runs_ = [run_service.get(ctx, run_id) for run_id in run_async(go)]
    except PreflightRefused as err:
        from orchestrator.cli.preflight import print_refusal

        print_refusal(err, json_=json_)
        raise
    following = ensure_followed(ctx.settings, opt_out=no_monitor)
    if json_:
        print_json([{**r.record(), "monitor": following.as_json()} for r in runs_])
        return
    for r in runs_:
        _say_launched(r)
    _say_following(following)
    console.print(f"watch them: eorch watch {' '.join(r.id for r in runs_)}")


def runs(
    status: Annotated[str | None, typer.Option(help="only runs with this status")] = None,
    host: Annotated[str | None, typer.Option(help="only runs on this host")] = None,
    since: Annotated[str | None, typer.Option(help="only runs created since: 7d, 12h, 30m or an ISO date")] = None,
    name: Annotated[str | None, typer.Option(help="only runs whose name matches this glob")] = None,
    signature: Annotated[str | None, typer.Option(help="only runs whose root cause has this signature id")] = None,
    exception: Annotated[str | None, typer.Option(help="only runs whose root cause is this exception")] = None,
    model: Annotated[str | None, typer.Option(help="only runs of this model path (or glob)")] = None,
    vllm: Annotated[str | None, typer.Option(help="only runs that ran this vllm version")] = None,
    speculators: Annotated[str | None, typer.Option(help="only runs that ran this speculators version")] = None,
    patch_set: Annotated[str | None, typer.Option(help="only runs launched with this patch set")] = None,
    limit: Annotated[int, typer.Option(help="at most this many")] = 50,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="more columns: host, phase, exit code, start time")]
    = False,
    refresh: Annotated[bool, typer.Option(help="when no monitor is running, check the shown active runs on "
                                          "their hosts first (a few seconds at most per host)")] = True,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """List runs, newest first, filtered by status, host, age, name, failure signature, exception or model.
    """
    from orchestrator.cli.listing import listing_records, print_listing
    from orchestrator.core.history import RunFilter, parse_since

    check_limit(limit)

    if status is not None and status not in STATUSES:
        raise UsageError(f"unknown status {status!r}: use one of {', '.join(STATUSES)}")
    flt = RunFilter(status=status, host=host, since=parse_since(since) if since else None, name=name,
                    signature=signature, exception=exception, model=model, vllm=vllm, speculators=speculators,
                    patch_set=patch_set)
    ctx = context()
    shown = [r.id for r in run_service.filtered(ctx, flt, limit=limit)]
    monitor_running = refreshed(ctx, shown, refresh)
    views = run_service.filtered(ctx, flt, limit=limit, monitor_running=monitor_running)
    records = listing_records(views)
    anything = bool(records) or run_service.any_run(ctx)
    if json_:
        print_json(records)
        return
    print_listing(console, err_console, records, anything=anything, wide=wide)


def logs(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new output")] = False,
    tail: Annotated[int | None, typer.Option("--tail", "-n", help="only the last N lines")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="the log's bytes as written, escape sequences included "
                                      "(a job's output can then act on your terminal)")] = False,
) -> None:
    """Print the run's log from the host, with the job's escape sequences and control characters removed."""
    from orchestrator.logparse.inert import InertStream

    out = _RawOut() if raw else InertStream()
    ctx = context()
    record = run_service.get(ctx, run)
    path = f"{record.remote_dir}/log"

    async def go(ctx: Context) -> None:
        session = await ctx.session(record.host)
        if not follow:
            # Streamed in chunks (memory stays flat at any log size); readable first, for a clear error.
            check = await session.transport.run(commands.readable(path))
            if check.exit_status != 0:
                raise NotFound(f"log of run {record.id} not readable on {record.host}: {path}")
            argv = commands.last_lines(path, tail) if tail is not None else commands.whole_file(path)
        else:
            argv = ["tail", "-n", str(tail), "-F", path] if tail is not None else commands.follow_file(path, 0)
        proc = await session.transport.start(argv)
        try:
            while chunk := await proc.read(1 << 16):
                sys.stdout.buffer.write(out.feed(chunk))
                if follow:
                    sys.stdout.buffer.flush()
        finally:
            sys.stdout.buffer.write(out.flush())
            await proc.stop()

    try:
        run_async(go)
    except KeyboardInterrupt:
        pass


class _RawOut:
    """``eorch logs --raw``: the bytes unchanged (InertStream's interface)."""

    def feed(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


def cancel(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
    grace: Annotated[float | None, typer.Option(help="seconds between TERM and KILL")] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Stop a run: TERM its process group and everything it spawned, KILL after a grace period."""
    from orchestrator.actions.cancel import cancel_run  # imported here: `eorch runs` starts faster

    result = run_async(lambda ctx: cancel_run(ctx, run, grace))
    if json_:
        print_json(result)
    elif result.get("already_terminal"):
        console.print(f"run {result['run_id']} already ended ({result['status']})")
    else:
        console.print(cancel_summary(result), highlight=False)


def cancel_summary(result: dict[str, object]) -> str:
    """What a cancel did, as one line that matches the run's recorded status."""
    gone = " (its run directory was gone from the host; exit code unknown)" if result.get("run_dir_gone") else ""
    if result["status"] == "cancelled":
        return f"cancelled run {result['run_id']}: no process left{gone}"
    why = f": {result['reason']}" if result.get("reason") else ""
    return f"run {result['run_id']} is {result['status']}{why}; no process of it is left{gone}"


def register(app: typer.Typer) -> None:
    from orchestrator.cli.show import show

    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(launch)
    app.command()(runs)
    app.command()(show)  # orchestrator/cli/show.py
    app.command()(logs)
    app.command()(cancel)
