"""`eorch host add|list|check|rm`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from orchestrator.cli.common import console, context, print_json, run_async, text
from orchestrator.context import Context
from orchestrator.core.destination import parse_destination
from orchestrator.core.launchrequest import parse_env
from orchestrator.errors import UsageError
from orchestrator.remote.hosts import LOCAL_HOST, validate_host_name
from orchestrator.services import hosts

SCHEDULERS = ("direct", "slurm")

host_app = typer.Typer(help="Hosts eorch can run jobs on (the built-in `local` is always there).",
                       no_args_is_help=True)


@host_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="short name used in eorch commands")],
    destination: Annotated[str, typer.Argument(
        help="what ssh accepts: [user@]host, an IP, an ~/.ssh/config alias, or ssh://user@host:port")],
    port: Annotated[int | None, typer.Option(help="ssh port (default: from the URL or ssh config, else 22)")] = None,
    root: Annotated[str, typer.Option(help="eorch's state dir on the host")] = "~/.eorch",
    python: Annotated[str, typer.Option(help="python3 interpreter on the host for eorch's worker")] = "python3",
    accept_new_host_key: Annotated[bool, typer.Option(
        "--accept-new-host-key", help="trust and pin the key of a host not in known_hosts (never a changed key)")] = False,
    scheduler: Annotated[str, typer.Option(
        help="direct: run jobs on the host itself; slurm: the host is a login node, jobs go through sbatch",
    )] = "direct",
    sbatch_arg: Annotated[list[str], typer.Option(
        "--sbatch-arg", help="sbatch option for every run on a slurm host, e.g. --sbatch-arg=--partition=gpu "
        "(repeatable)")] = [],  # noqa: B006
    env: Annotated[list[str], typer.Option(
        "--env", "-e", help="KEY=VALUE set for eorch's worker on the host, e.g. SLURM_CONF=/etc/x/slurm.conf "
        "(repeatable; jobs inherit it)")] = [],  # noqa: B006
) -> None:
    """Add a host after connecting to it once (host key verified); a slurm host must answer sinfo."""
    validate_host_name(name)
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"--port {port} is not a TCP port: give 1 to 65535")
    if name == LOCAL_HOST:
        raise UsageError("`local` is built in; pick another name")
    if scheduler not in SCHEDULERS:
        raise UsageError(f"unknown scheduler {scheduler!r}: use one of {', '.join(SCHEDULERS)}")
    if sbatch_arg and scheduler != "slurm":
        raise UsageError("--sbatch-arg needs --scheduler slurm")
    for arg in sbatch_arg:
        if not arg.startswith("-"):
            raise UsageError(f"bad --sbatch-arg {arg!r}: give an sbatch option, like --sbatch-arg=--partition=gpu")
    host_env = parse_env(env)
    dest = parse_destination(destination, port)
    ctx = context()
    hosts.refuse_existing(ctx, name)
    new = hosts.NewHost(name=name, destination=dest.login, port=dest.port, root=root, python=python,
                        scheduler=scheduler, sbatch_args=tuple(sbatch_arg), env=host_env)
    notes = run_async(lambda _: hosts.first_contact(ctx, new, accept_new_host_key))
    hosts.add(ctx, new)
    for note in notes:
        console.print(note, markup=False)
    via = " · jobs go through Slurm" if scheduler == "slurm" else ""
    shown = dest.login + (f":{dest.port}" if dest.port else "")
    console.print(f"added host [bold]{escape(name)}[/] ({escape(shown)}){escape(via)}")


@host_app.command("list")
def list_(json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """List hosts and their last known reachability."""
    records = [h.record() for h in hosts.list_hosts(context())]
    if json_:
        print_json(records)
        return
    table = Table("name", "destination", "root", "scheduler", "reachable")
    for h in records:
        reach = {True: Text("yes", style="green"), None: Text("?"),
                 False: Text.assemble(("no", "red"), f" since {h['unreachable_since']}")}[h["reachable"]]
        scheduler = " ".join([h["scheduler"], *h["sbatch_args"]])
        table.add_row(text(h["name"]), text(h["destination"] + (f":{h['port']}" if h["port"] else "")),
                      text(h["root"]), text(scheduler), reach)
    console.print(table)


@host_app.command("rm")
def rm(name: str) -> None:
    """Forget a host (only when no run references it)."""
    if name == LOCAL_HOST:
        raise UsageError("`local` is built in and cannot be removed")
    hosts.remove(context(), name)
    console.print(f"removed host {name}", markup=False)


@host_app.command("check")
def check(
    name: str,
    env: Annotated[str | None, typer.Option("--env", help="also fingerprint this interpreter on the host")] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Connect and report OS, Python, free disk in the root dir, and GPUs (and an interpreter's versions)."""

    async def go(ctx: Context) -> dict[str, Any]:
        return await hosts.check(ctx, name, env)

    facts = run_async(go)
    hosts.record_check(context(), name, facts)
    if json_:
        print_json({"host": name, **facts})
        return
    console.print(f"[bold]{escape(name)}[/]: " + escape(f"{facts['hostname']} · {facts['os']} · Python {facts['python']}"))
    console.print(f"root {facts['root']}: {facts['disk_free_bytes'] / 2**30:.1f} GiB free", markup=False)
    if facts.get("slurm"):
        parts = ", ".join(f"{p['partition']} ({p['state']}, {p['nodes']} nodes)"
                          for p in facts["slurm"]["partitions"])
        console.print(f"Slurm login node: {facts['slurm']['slurm_version']}; partitions: {parts or 'none'}", markup=False)
    if not facts["gpus"]:
        console.print("GPUs: none (no nvidia-smi or no devices)")
    for gpu in facts["gpus"]:
        free = gpu["memory_total_mib"] - gpu["memory_used_mib"]
        console.print(f"GPU {gpu['index']}: {gpu['name']} · {free} MiB free of {gpu['memory_total_mib']} MiB",
                      markup=False)
    if env:
        from orchestrator.core.envlines import env_lines

        for line in env_lines({"env_fingerprint": facts["env"]}):
            console.print(line, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(host_app, name="host")
