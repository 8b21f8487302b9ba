"""`eorch host add|list|check|rm`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from orchestrator.cli.common import console, context, print_json, run_async, text
from orchestrator.context import Context
from orchestrator.destination import parse_destination
from orchestrator.errors import HostKeyRefused, UsageError
from orchestrator.hosts import LOCAL_HOST, HostSession, validate_host_name
from orchestrator.launcher import parse_env
from orchestrator.store.models import Host
from orchestrator.store.queries import get_host, list_hosts, utcnow
from orchestrator.views import host_record

SCHEDULERS = ("direct", "slurm")

host_app = typer.Typer(help="Hosts eorch can run jobs on (the built-in `local` is always there).",
                       no_args_is_help=True)


def _append_line(path: Path, line: str) -> None:
    with open(path, "a") as f:
        f.write(line)


async def _pin_and_open(ctx: Context, session: HostSession, accept_new: bool) -> list[str]:
    from orchestrator.ssh import SshTransport, known_hosts_entry_host

    notes: list[str] = []
    try:
        await session.open()
        return notes
    except HostKeyRefused as err:
        transport = session.transport
        if not accept_new or not isinstance(transport, SshTransport) or "CHANGED" in str(err):
            raise
        host, port, key = await transport.fetch_host_key()
        line = f"{known_hosts_entry_host(host, port)} {key.export_public_key('openssh').decode().strip()}\n"
        await asyncio.to_thread(_append_line, ctx.settings.pinned_known_hosts, line)
        notes.append(f"pinned host key {key.get_fingerprint('sha256')} for {known_hosts_entry_host(host, port)}"
                     f" in {ctx.settings.pinned_known_hosts}")
    await session.open()
    return notes


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
    with ctx.db() as s:
        if s.get(Host, name) is not None:
            raise UsageError(f"host {name!r} already exists (remove it with `eorch host rm {name}`)")
    host = Host(name=name, destination=dest.login, port=dest.port, root=root, python=python, created_at=utcnow(),
                scheduler=scheduler, sbatch_args=list(sbatch_arg) or None, env=host_env or None)
    session = HostSession.for_host(host, ctx.settings)

    async def connect(_: Context) -> list[str]:
        try:
            notes = await _pin_and_open(ctx, session, accept_new_host_key)
            if scheduler == "slurm":
                facts = await session.call("slurm_check")
                parts = ", ".join(f"{p['partition']} ({p['state']})" for p in facts["partitions"])
                notes.append(f"{facts['slurm_version']}; partitions: {parts or 'none'}")
            return notes
        finally:
            await session.close()

    notes = run_async(connect)
    with ctx.db() as s:
        host.reachable = True
        s.add(host)
    for note in notes:
        console.print(note, markup=False)
    via = " · jobs go through Slurm" if scheduler == "slurm" else ""
    shown = dest.login + (f":{dest.port}" if dest.port else "")
    console.print(f"added host [bold]{escape(name)}[/] ({escape(shown)}){escape(via)}")


@host_app.command("list")
def list_(json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """List hosts and their last known reachability."""
    ctx = context()
    with ctx.db() as s:
        hosts = [host_record(h) for h in list_hosts(s)]
    if json_:
        print_json(hosts)
        return
    table = Table("name", "destination", "root", "scheduler", "reachable")
    for h in hosts:
        reach = {True: "[green]yes[/]", False: f"[red]no[/] since {h['unreachable_since']}", None: "?"}[h["reachable"]]
        scheduler = " ".join([h["scheduler"], *h["sbatch_args"]])
        table.add_row(text(h["name"]), text(h["destination"] + (f":{h['port']}" if h["port"] else "")),
                      text(h["root"]), text(scheduler), text(reach))
    console.print(table)


@host_app.command("rm")
def rm(name: str) -> None:
    """Forget a host (only when no run references it)."""
    if name == LOCAL_HOST:
        raise UsageError("`local` is built in and cannot be removed")
    ctx = context()
    from sqlalchemy import select

    from orchestrator.store.models import Run

    with ctx.db() as s:
        host = get_host(s, name)
        if s.scalars(select(Run.id).where(Run.host == name).limit(1)).first():
            raise UsageError(f"host {name!r} has runs in the history; it is kept")
        s.delete(host)
    console.print(f"removed host {name}", markup=False)


@host_app.command("check")
def check(
    name: str,
    env: Annotated[str | None, typer.Option("--env", help="also fingerprint this interpreter on the host")] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Connect and report OS, Python, free disk in the root dir, and GPUs (and an interpreter's versions)."""

    async def go(ctx: Context) -> dict[str, Any]:
        session = await ctx.session(name)
        facts = await session.call("check", root=session.root)
        if ctx.host_row(name).scheduler == "slurm":
            facts["slurm"] = await session.call("slurm_check")
        if env:
            from orchestrator.patches import fingerprint

            facts["env"] = await fingerprint(ctx, name, env)
        return facts

    facts = run_async(go)
    ctx = context()
    with ctx.db() as s:
        host = get_host(s, name)
        host.facts, host.reachable, host.unreachable_since = facts, True, None
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
        from orchestrator.views import env_lines

        for line in env_lines({"env_fingerprint": facts["env"]}):
            console.print(line, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(host_app, name="host")
