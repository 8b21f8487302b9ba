"""`eorch preflight`, and the preflight step of `eorch launch --spec`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from orchestrator.cli.common import console, err_console, print_json, run_async
from orchestrator.errors import PreflightRefused, UsageError

if TYPE_CHECKING:
    from orchestrator.core.launchrequest import LaunchRequest


def preflight(
    spec: Annotated[Path, typer.Option(help="the eagle3-extract job spec TOML to check")],
    host: Annotated[str, typer.Option("--host", "-H", help="host name (see `eorch host list`)")] = "local",
    set_: Annotated[list[str], typer.Option(
        "--set", help="override a spec key: KEY.PATH=VALUE (repeatable), as for launch")] = [],  # noqa: B006
    patch: Annotated[str | None, typer.Option(help="a patch set that must be applied (verified on the host)")] = None,
    python: Annotated[str | None, typer.Option(help="the interpreter --patch applies to (default: vllm_python)")]
    = None,
    json_: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Check a spec against the host without starting anything; exits 1 when a check fails.

    The checks: model config, layer ids, lengths, TP, prefix caching, load timeouts, interpreters, known-bad
    versions, patch set, GPUs (memory, processes, locks), disk."""
    from orchestrator.actions.preflightrun import preflight as run_preflight
    from orchestrator.actions.speclaunch import spec_launch_request

    request = spec_launch_request(spec, extra_env={}, name=None, cwd=None, overrides=set_)
    if request.kind != "eagle3-extract":
        raise UsageError(f"spec {spec.name}: preflight checks eagle3-extract specs; this one is a command")
    report = run_async(lambda ctx: run_preflight(ctx, host, request.spec or {}, patch=patch, python=python)).to_dict()
    if json_:
        print_json(report)
    else:
        print_report(report)
    if report["verdict"] == "fail":
        raise typer.Exit(1)


def print_report(report: dict[str, Any], *, to_stderr: bool = False, all_checks: bool = True) -> None:
    from orchestrator.preflight import lines

    out = err_console if to_stderr else console
    for line in lines(report, all_checks=all_checks):
        out.print(line, highlight=False, soft_wrap=True)


def print_refusal(err: PreflightRefused, *, json_: bool) -> None:
    """A launch preflight refused: its report as JSON on stdout, or as text on stderr (the caller re-raises)."""
    if json_:
        print_json({"preflight": err.report})
    else:
        print_report(err.report, to_stderr=True)


def launch_checked(host: str, request: LaunchRequest, *, force: bool, json_: bool) -> str:
    """Preflight, then launch (services.launches); warnings and a refusal's report are printed. The id of the
    run launched."""
    from orchestrator.services.launches import launch_checked as checked

    try:
        run, report = run_async(lambda ctx: checked(ctx, host, request, force=force))
    except PreflightRefused as err:
        print_refusal(err, json_=json_)
        raise
    if not json_ and report.verdict.value != "ok":
        print_report(report.to_dict(), all_checks=False)
    return run.id


def register(app: typer.Typer) -> None:
    app.command()(preflight)
