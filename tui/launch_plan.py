"""The launch form as ``launcher.launch`` arguments, validated (pure but for reading a spec file)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import UsageError
from orchestrator.launcher import parse_env


@dataclass(frozen=True)
class LaunchForm:
    host: str | None
    command: str = ""
    spec_path: str = ""
    name: str = ""
    env: str = ""
    cwd: str = ""


def plan(form: LaunchForm) -> dict[str, Any]:
    """Keyword arguments for ``launch(ctx, host, **kwargs)`` plus ``host``; UsageError says what is wrong."""
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
        from orchestrator.speclaunch import spec_launch_args

        kwargs = spec_launch_args(Path(form.spec_path.strip()).expanduser(), extra_env=env, name=name, cwd=cwd)
        return {"host": form.host, **kwargs}
    try:
        argv = shlex.split(form.command)
    except ValueError as err:
        raise UsageError(f"command: {err}") from None
    if not argv:
        raise UsageError("command: type the command to run, or give a job spec file")
    return {"host": form.host, "argv": argv, "name": name, "env": env, "cwd": cwd}


def describe(kwargs: dict[str, Any]) -> str:
    """What will run, in the words of `eorch launch`."""
    lines = [f"on {kwargs['host']}: {shlex.join(kwargs['argv'])}"]
    if kwargs.get("name"):
        lines.append(f"name {kwargs['name']}")
    if kwargs.get("kind", "command") != "command":
        lines.append(f"recipe {kwargs['kind']}" + (f" · model {kwargs['model']}" if kwargs.get("model") else ""))
    if kwargs.get("env"):
        lines.append("env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in kwargs["env"].items()))
    if kwargs.get("cwd"):
        lines.append(f"cwd {kwargs['cwd']}")
    return "\n".join(lines)
