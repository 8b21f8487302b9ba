"""Preflight at the edge: one worker round trip for the host's facts, the pure judge, the known-bad table file.

Used by ``eorch preflight`` and by ``eorch launch --spec`` (before anything starts on the host).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.actions.launcher import launch
from orchestrator.actions.patches import load_patch_set, run_pythons
from orchestrator.context import Context
from orchestrator.core.launchrequest import LaunchRequest
from orchestrator.errors import ConfigError, PreflightRefused
from orchestrator.preflight import KnownBad, Report, judge, parse_table
from orchestrator.store.models import Run
from orchestrator.store.queries import get_host

KNOWN_BAD = Path(__file__).resolve().parents[2] / "deploy" / "known-bad.toml"


def load_known_bad(path: Path = KNOWN_BAD) -> list[KnownBad]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"known-bad table {path.name} unreadable: {err.strerror}") from None
    return parse_table(text, source=path.name)


async def preflight(ctx: Context, host: str, spec: dict[str, Any], *, patch: str | None = None,
                    python: str | None = None, known_bad: Path = KNOWN_BAD) -> Report:
    """The report for an eagle3-extract spec (its worker payload) on host; nothing is changed anywhere."""
    table = load_known_bad(known_bad)
    with ctx.db() as s:
        scheduler = get_host(s, host).scheduler or "direct"
    patch_req = None
    if patch:
        patch_set = load_patch_set(patch)
        patch_req = {"python": run_pythons([], spec, python, "python3")[0], "patch_set": patch_set.payload()}
    session = await ctx.session(host)
    t0 = time.monotonic()
    facts = await session.call("preflight", spec=spec, root=session.root, patch=patch_req)
    report = judge(spec, facts, table, scheduler)
    return report.with_(seconds=round(time.monotonic() - t0, 3),
                        extra={"host": host, "host_seconds": facts.get("seconds")})


async def launch_checked(ctx: Context, host: str, request: LaunchRequest, *,
                         force: bool = False) -> tuple[Run, Report]:
    """Preflight, then ``launcher.launch(request)`` in the same host session, the report stored on the run and
    its GPUs locked; a failed check raises PreflightRefused (nothing started) unless ``force``."""
    report = await checked_report(ctx, host, request, force=force)
    run = await launch(ctx, host, with_report(request, report, force=force))
    return run, report


async def checked_report(ctx: Context, host: str, request: LaunchRequest, *, force: bool = False) -> Report:
    """The preflight of a spec launch; PreflightRefused (nothing started) for a failed check unless ``force``."""
    # --apply-patches: the launch applies the set itself (orchestrator.actions.patches), so it is not a failed check
    patch = None if request.apply_patches else request.patch
    report = await preflight(ctx, host, request.spec or {}, patch=patch, python=request.python)
    report = report.with_(forced=bool(report.failed and force))
    if report.failed and not force:
        raise PreflightRefused(host, report.to_dict())
    return report


def with_report(request: LaunchRequest, report: Report, *, force: bool) -> LaunchRequest:
    """The request with its preflight report stored and the GPUs it found locked."""
    return replace(request, preflight=report.to_dict(), gpu_locks=tuple(report.gpus), force_locks=force)
