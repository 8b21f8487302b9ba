"""Starting runs, as the CLI and the TUI ask for them: launch, launch after a preflight, rerun, tool jobs, retry.

The work is done by the writers (`launcher`, `preflightrun`, `rerun`, `tooljobs`, `warmserver`); this is the
one door the interfaces use, and every run comes out as a `RunView`: no ORM row reaches a screen.
"""

from __future__ import annotations

from typing import Any

from orchestrator.actions.rerun import RerunOptions as RerunOptions  # noqa: PLC0414 (what load_plan takes)
from orchestrator.actions.rerun import RerunPlan as RerunPlan  # noqa: PLC0414 (what load_plan gives)
from orchestrator.context import Context
from orchestrator.core.launchrequest import LaunchRequest
from orchestrator.preflight import Report
from orchestrator.services.runview import RunView, view_of


async def launch(ctx: Context, host: str, request: LaunchRequest) -> RunView:
    """Start ``request`` on ``host`` (recorded pending first, running once the host started it)."""
    from orchestrator.actions.launcher import (
        launch as launch_run,  # imported here: `eorch runs` starts faster
    )

    return view_of(await launch_run(ctx, host, request))


async def launch_checked(ctx: Context, host: str, request: LaunchRequest, *,
                         force: bool = False) -> tuple[RunView, Report]:
    """Preflight, then launch with the report stored on the run; PreflightRefused (nothing started) unless
    ``force``."""
    from orchestrator.actions.preflightrun import launch_checked as checked_run

    run, report = await checked_run(ctx, host, request, force=force)
    return view_of(run), report


async def checked_request(ctx: Context, host: str, request: LaunchRequest, *, force: bool = False) -> LaunchRequest:
    """The request with its host's preflight report attached (PreflightRefused unless ``force``), nothing
    started: for launching on several hosts once all of them passed."""
    from orchestrator.actions.preflightrun import checked_report, with_report

    report = await checked_report(ctx, host, request, force=force)
    return with_report(request, report, force=force)


def load_plan(ctx: Context, ref: str, options: RerunOptions | None = None) -> RerunPlan:
    """What `eorch rerun REF` would start (NotFound / UsageError if it cannot)."""
    from orchestrator.actions.rerun import load_plan as plan_of

    return plan_of(ctx, ref, options)


async def rerun(ctx: Context, plan: RerunPlan, *, checks: bool = True,
                force: bool = False) -> tuple[RunView, Report | None]:
    """Launch the plan as `eorch launch` would (a spec after its preflight unless ``checks`` is off)."""
    from orchestrator.actions.rerun import rerun as rerun_plan

    run, report = await rerun_plan(ctx, plan, checks=checks, force=force)
    return view_of(run), report


async def convert_legacy(ctx: Context, host: str, args: list[str], *, python: str | None,
                         name: str) -> tuple[RunView, dict[str, Any] | None]:
    """The worker's legacy-data converter as a tracked run, to its end, and its JSON summary."""
    from orchestrator.actions.tooljobs import run_tool

    run, summary = await run_tool(ctx, host, "worker.convert_legacy", list(args), python=python, name=name)
    return view_of(run), summary


async def setup_engines(ctx: Context, host: str, *, vllm: str, speculators: str, cpu: bool, python: str | None,
                        force: bool) -> tuple[RunView, dict[str, Any] | None]:
    """`eorch host setup`: the engine venvs built and verified on the host, as a tracked run."""
    from orchestrator.actions.tooljobs import setup_engines as setup

    run, summary = await setup(ctx, host, vllm=vllm, speculators=speculators, cpu=cpu, python=python, force=force)
    return view_of(run), summary


async def request_retry(ctx: Context, ref: str) -> RunView:
    """Ask a kept server's run to run its client again (UsageError if it is not waiting for a retry)."""
    from orchestrator.actions.warmserver import request_retry as ask

    return view_of(await ask(ctx, ref))
