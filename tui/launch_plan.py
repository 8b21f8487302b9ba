"""The launch form as a host and a ``LaunchRequest``, validated (pure but for reading a spec file)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from orchestrator.core.launchrequest import LaunchRequest, parse_env
from orchestrator.errors import UsageError


@dataclass(frozen=True)
class LaunchForm:
    host: str | None
    command: str = ""
    spec_path: str = ""
    name: str = ""
    env: str = ""
    cwd: str = ""


@dataclass(frozen=True)
class LaunchPlan:
    """What the form would launch: ``launcher.launch(ctx, host, request)``."""

    host: str
    request: LaunchRequest


def plan(form: LaunchForm) -> LaunchPlan:
    """The form's launch; UsageError says what is wrong."""
    if not form.host:
        raise UsageError("host: pick a host")
    try:
        env = parse_env(shlex.split(form.env))
    except ValueError as err:
        raise UsageError(f"env: {err}") from None
    name, cwd = form.name.strip() or None, form.cwd.strip() or None
    if form.spec_path.strip() and form.command.strip():
        raise UsageError("give either a command or a job spec file, not both")
    if form.spec_path.strip():
        from orchestrator.actions.speclaunch import spec_launch_request

        request = spec_launch_request(Path(form.spec_path.strip()).expanduser(), extra_env=env, name=name, cwd=cwd)
        return LaunchPlan(form.host, request)
    try:
        argv = shlex.split(form.command)
    except ValueError as err:
        raise UsageError(f"command: {err}") from None
    if not argv:
        raise UsageError("command: type the command to run, or give a job spec file")
    return LaunchPlan(form.host, LaunchRequest.command(argv, name=name, env=env, cwd=cwd))


def describe(planned: LaunchPlan) -> str:
    """What will run, in the words of `eorch launch`."""
    request = planned.request
    lines = [f"on {planned.host}: {shlex.join(request.shown_argv())}"]
    if request.name:
        lines.append(f"name {request.name}")
    if request.kind != "command":
        lines.append(f"recipe {request.kind}" + (f" · model {request.model}" if request.model else ""))
    if request.env:
        lines.append("env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in request.env.items()))
    if request.cwd:
        lines.append(f"cwd {request.cwd}")
    return "\n".join(lines)
