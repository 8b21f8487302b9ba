"""`eorch rerun RUN`: launch what a run ran again (orchestrator.actions.rerun), after a confirmation."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import console, context, err_console, print_json, run_async


def rerun(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
    host: Annotated[str | None, typer.Option("--host", "-H", help="run it on this host instead")] = None,
    name: Annotated[str | None, typer.Option(help="a name for the new run (default: the run's)")] = None,
    secret_env: Annotated[list[str], typer.Option(
        "--secret-env", help="KEY=VALUE for a secret variable of the run, which was never recorded "
        "(repeatable)")] = [],  # noqa: B006
    patch: Annotated[str | None, typer.Option(help="the patch set to require instead of the run's (a directory "
                                              "for one not shipped with eorch)")] = None,
    apply_patches: Annotated[bool, typer.Option("--apply-patches", help="apply the patch set if not applied")]
    = False,
    canary: Annotated[bool | None, typer.Option(
        "--canary/--no-canary", help="eagle3-extract: run the canary first, or not (default: as the run did)")] = None,
    no_preflight: Annotated[bool, typer.Option("--no-preflight", help="skip the preflight checks of an "
                                               "eagle3-extract run")] = False,
    force: Annotated[bool, typer.Option("--force", help="launch even when a preflight check fails")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    no_monitor: Annotated[bool, typer.Option("--no-monitor", help="do not start a background monitor when none "
                                             "is running")] = False,
    json_: Annotated[bool, typer.Option("--json", help="print the new run record as JSON")] = False,
) -> None:
    """Launch a run again: the same command line, env, cwd, host and patch set, or the same recorded spec.

    An eagle3-extract run is checked first, as `eorch launch --spec` does. Secret variables were never
    recorded: give them again with --secret-env. The new run records which run it repeats (`eorch show`).
    """
    from orchestrator.core.launchrequest import parse_env
    from orchestrator.errors import PreflightRefused
    from orchestrator.monitoring.autostart import ensure_followed
    from orchestrator.services import runs as run_service
    from orchestrator.services.launches import RerunOptions, load_plan
    from orchestrator.services.launches import rerun as rerun_run

    options = RerunOptions(host=host, name=name, secret_env=parse_env(secret_env, option="--secret-env"),
                           patch=patch, apply_patches=apply_patches, canary=canary)
    ctx = context()
    plan = load_plan(ctx, run, options)
    if not yes:
        err_console.print(plan.describe(), highlight=False, markup=False, soft_wrap=True)
        if not typer.confirm("launch it?", err=True):
            err_console.print("nothing was started", highlight=False)
            raise typer.Exit(1)
    try:
        new, report = run_async(lambda c: rerun_run(c, plan, checks=not no_preflight, force=force))
    except PreflightRefused as err:
        from orchestrator.cli.preflight import print_refusal

        print_refusal(err, json_=json_)
        raise
    following = ensure_followed(ctx.settings, opt_out=no_monitor)
    if json_:
        print_json({**run_service.get(ctx, new.id).record(), "monitor": following.as_json()})
        return
    if report is not None and report.verdict.value != "ok":
        from orchestrator.cli.preflight import print_report

        print_report(report.to_dict(), all_checks=False)
    from orchestrator.cli.runs import _say_following, _say_launched

    _say_launched(new)
    console.print(f"rerun of {plan.original}", highlight=False, markup=False)
    _say_following(following)
    console.print(f"watch it: eorch watch {new.id}    logs: eorch logs {new.id} -f", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(rerun)
