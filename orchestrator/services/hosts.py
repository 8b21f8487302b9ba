"""Hosts as the CLI and the TUI read and change them: list, add, remove, and one `check` that both record.

A host check is one thing wherever it is asked for: the worker's `check` (OS, Python, disk, GPUs), Slurm's
partitions on a Slurm login node, optionally an interpreter's fingerprint, recorded by `record_check` as the
host's facts and reachability.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.context import Context
from orchestrator.core.humanize import iso
from orchestrator.errors import EorchError, HostKeyRefused, UsageError
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries
from orchestrator.store.models import Host, Run


@dataclass(frozen=True, slots=True)
class HostView:
    name: str
    destination: str
    reachable: bool | None
    unreachable_since: datetime | None = None
    last_error: str | None = None
    facts: dict[str, Any] | None = field(default=None, compare=False)
    port: int | None = None
    root: str = "~/.eorch"
    python: str = "python3"
    scheduler: str = "direct"
    sbatch_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The host as `eorch host list --json` prints it."""
        return {
            "name": self.name,
            "destination": self.destination,
            "port": self.port,
            "root": self.root,
            "python": self.python,
            "scheduler": self.scheduler,
            "sbatch_args": list(self.sbatch_args),
            "env": dict(self.env),
            "reachable": self.reachable,
            "unreachable_since": iso(self.unreachable_since),
            "last_error": self.last_error,
        }


def host_view(host: Host) -> HostView:
    return HostView(name=host.name, destination=host.destination, reachable=host.reachable,
                    unreachable_since=host.unreachable_since, last_error=host.last_error,
                    facts=copy.deepcopy(host.facts) if host.facts else None, port=host.port, root=host.root,
                    python=host.python, scheduler=host.scheduler or "direct",
                    sbatch_args=tuple(host.sbatch_args or ()), env=dict(host.env or {}))


def list_hosts(ctx: Context) -> list[HostView]:
    with ctx.db() as s:
        return [host_view(h) for h in queries.list_hosts(s)]


def get(ctx: Context, name: str) -> HostView:
    """The host called ``name``; NotFound naming `eorch host list` otherwise."""
    with ctx.db() as s:
        return host_view(queries.get_host(s, name))


def require(ctx: Context, names: list[str]) -> None:
    """NotFound for the first name that is no host (before anything starts)."""
    with ctx.db() as s:
        for name in names:
            queries.get_host(s, name)


# ------------------------------------------------------------------------------------------------ add, rm


@dataclass(frozen=True, slots=True)
class NewHost:
    name: str
    destination: str
    port: int | None
    root: str
    python: str
    scheduler: str
    sbatch_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def row(self) -> Host:
        return Host(name=self.name, destination=self.destination, port=self.port, root=self.root,
                    python=self.python, created_at=queries.utcnow(), scheduler=self.scheduler,
                    sbatch_args=list(self.sbatch_args) or None, env=self.env or None)


def refuse_existing(ctx: Context, name: str) -> None:
    with ctx.db() as s:
        if s.get(Host, name) is not None:
            raise UsageError(f"host {name!r} already exists (remove it with `eorch host rm {name}`)")


def _append_line(path: Path, line: str) -> None:
    with open(path, "a") as f:
        f.write(line)


async def _pin_and_open(ctx: Context, session: HostSession, accept_new: bool) -> list[str]:
    from orchestrator.remote.ssh import SshTransport, known_hosts_entry_host

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


async def first_contact(ctx: Context, new: NewHost, accept_new_host_key: bool) -> list[str]:
    """Connect to a host not yet added (host key verified, or pinned when asked); a Slurm login node must
    answer sinfo. What was learnt, as lines to print."""
    session = HostSession.for_host(new.row(), ctx.settings)
    try:
        notes = await _pin_and_open(ctx, session, accept_new_host_key)
        if new.scheduler == "slurm":
            facts = await session.call("slurm_check")
            parts = ", ".join(f"{p['partition']} ({p['state']})" for p in facts["partitions"])
            notes.append(f"{facts['slurm_version']}; partitions: {parts or 'none'}")
        return notes
    finally:
        await session.close()


def add(ctx: Context, new: NewHost) -> None:
    """Record a host that answered `first_contact`."""
    with ctx.db() as s:
        host = new.row()
        host.reachable = True
        s.add(host)


def remove(ctx: Context, name: str) -> None:
    """Forget a host; refused while a run of the history references it."""
    from sqlalchemy import select

    with ctx.db() as s:
        host = queries.get_host(s, name)
        if s.scalars(select(Run.id).where(Run.host == name).limit(1)).first():
            raise UsageError(f"host {name!r} has runs in the history; it is kept")
        s.delete(host)


# ------------------------------------------------------------------------------------------------- check


async def check(ctx: Context, name: str, env: str | None = None) -> dict[str, Any]:
    """The host's facts: OS, Python, free disk in the root, GPUs; Slurm's partitions on a Slurm login node;
    with ``env``, that interpreter's fingerprint. Raises what the connection or the worker raised."""
    session = await ctx.session(name)
    facts: dict[str, Any] = await session.call("check", root=session.root)
    if get(ctx, name).scheduler == "slurm":
        facts["slurm"] = await session.call("slurm_check")
    if env:
        from orchestrator.actions.patches import fingerprint

        facts["env"] = await fingerprint(ctx, name, env)
    return facts


async def try_check(ctx: Context, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """`check`, as (facts, None) or (None, why it failed); the broken session is dropped."""
    try:
        return await check(ctx, name), None
    except (EorchError, OSError) as err:
        await ctx.drop_session(name)
        return None, str(err)


def record_check(ctx: Context, name: str, facts: dict[str, Any] | None, error: str | None = None) -> None:
    """Record a check: its facts and the host reachable, or the host unreachable with why."""
    with ctx.db() as s:
        if facts is not None:
            host = s.get(Host, name)
            if host is not None:
                host.facts = facts
        queries.set_reachability(s, name, facts is not None, error)


def add_facts(ctx: Context, name: str, facts: dict[str, Any]) -> None:
    """Merge ``facts`` into what the host's facts say (e.g. the engine venvs a tool job verified)."""
    with ctx.db() as s:
        row = queries.get_host(s, name)
        row.facts = {**(row.facts or {}), **facts}
