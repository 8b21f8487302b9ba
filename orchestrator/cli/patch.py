"""`eorch patch check|apply|revert|status|actions` and `eorch matrix`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from orchestrator.actions.patches import load_patch_set, patch_action
from orchestrator.cli.common import check_limit, console, context, print_json, run_async, text

patch_app = typer.Typer(help="Patch sets: check, apply, revert installed packages on a host, all files or none.",
                        no_args_is_help=True)

HostOpt = Annotated[str, typer.Option("--host", "-H", help="host name (see `eorch host list`)")]
PythonOpt = Annotated[str, typer.Option("--python", help="the interpreter on the host whose packages to patch")]
SetArg = Annotated[str, typer.Argument(help="patch-set directory, or the name of one under deploy/patches/")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the host's report as JSON")]
ForceOpt = Annotated[bool, typer.Option("--force", help="apply even if the installed version is not listed")]

STATE_STYLE = {"applied": "green", "not-applied": "yellow", "partial": "bold red", "conflict": "bold red",
               "original": "yellow", "patched": "green", "changed": "bold red", "missing": "bold red"}


def _do(action: str, host: str, python: str, set_ref: str, force: bool, json_: bool) -> None:
    patch_set = load_patch_set(set_ref)
    report = run_async(lambda ctx: patch_action(ctx, host, python, patch_set, action, force))
    if json_:
        print_json(report)
        return
    console.print(f"[bold]{escape(patch_set.name)}[/] on {escape(host)} · {escape(report['executable'])} · "
                  f"{escape(report['distribution'])} {escape(report['version'])}"
                  + (" [yellow](version not listed; forced)[/]" if report.get("forced") else ""), highlight=False)
    files = report.get("files") or report["files_before"]
    state = report.get("state", report["state_before"])
    for f in files:
        console.print(f"  [{STATE_STYLE.get(f['state'], '')}]{escape(f['state']):<9}[/] {escape(f['abs_path'])}  "
                      f"sha256 {(f['sha256'] or '—')[:16]}", highlight=False)
    if action == "check":
        console.print(f"check passed: would change {', '.join(report['changes']) or 'nothing (already applied)'}",
                      markup=False)
    elif action == "status":
        console.print(f"state: [{STATE_STYLE.get(state, '')}]{escape(state)}[/]")
    elif report.get("changed"):
        console.print(f"{'applied' if action == 'apply' else 'reverted'} {len(report['changes'])} file(s), "
                      f"verified by {report['executable']}; originals backed up in {report['backup']}", markup=False)
    else:
        console.print(report.get("note", "nothing to do"), markup=False)


@patch_app.command("check")
def check(set_ref: SetArg, host: HostOpt = "local", python: PythonOpt = "python3", force: ForceOpt = False,
          json_: JsonOpt = False) -> None:
    """Dry run: resolve the package with that interpreter, check version and hashes, apply in memory."""
    _do("check", host, python, set_ref, force, json_)


@patch_app.command("apply")
def apply(set_ref: SetArg, host: HostOpt = "local", python: PythonOpt = "python3", force: ForceOpt = False,
          json_: JsonOpt = False) -> None:
    """Apply every file of the set or none; a second apply is a no-op."""
    _do("apply", host, python, set_ref, force, json_)


@patch_app.command("revert")
def revert(set_ref: SetArg, host: HostOpt = "local", python: PythonOpt = "python3", json_: JsonOpt = False) -> None:
    """Restore the original files and verify their sha256."""
    _do("revert", host, python, set_ref, True, json_)


@patch_app.command("status")
def status(set_ref: SetArg, host: HostOpt = "local", python: PythonOpt = "python3", json_: JsonOpt = False) -> None:
    """Whether the set is applied, per file, as that interpreter would import it."""
    _do("status", host, python, set_ref, True, json_)


@patch_app.command("actions")
def actions(host: Annotated[str | None, typer.Option("--host", "-H", help="only this host")] = None,
            limit: Annotated[int, typer.Option(help="at most this many")] = 20, json_: JsonOpt = False) -> None:
    """The recorded patch actions, newest first."""
    check_limit(limit)
    from orchestrator.services import patches

    rows = patches.actions(context(), host, limit)
    if json_:
        print_json(rows)
        return
    table = Table("at", "host", "python", "set", "action", "ok", "result")
    for r in rows:
        d = r["details"]
        result = d.get("error") or d.get("note") or d.get("state") or d.get("would") or ""
        table.add_row(text(r["at"]), text(r["host"]), text(r["python"]), text(r["set"]), text(r["action"]),
                      "[green]yes[/]" if r["ok"] else "[red]no[/]", text(result))
    console.print(table)


def matrix_cmd(json_: JsonOpt = False) -> None:
    """Run outcomes by (vllm, speculators, patch set): what works with what."""
    from orchestrator.services import patches

    rows = patches.matrix(context())
    if json_:
        print_json(rows)
        return
    statuses = ["succeeded", "failed", "cancelled", "lost", "running"]
    table = Table("vllm", "speculators", "patch set", "runs", *statuses)
    for r in rows:
        table.add_row(text(r["vllm"]), text(r["speculators"]), text(r["patch_set"]), str(r["runs"]),
                      *[str(r.get(st, "")) for st in statuses])
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(patch_app, name="patch")
    app.command("matrix")(matrix_cmd)
