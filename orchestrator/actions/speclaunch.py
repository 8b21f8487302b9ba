"""A job spec turned into a launch request: a command as is, a recipe as eorch's own worker module."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.core.launchrequest import LaunchRequest, RunDirPath, WorkerModule
from orchestrator.core.secretenv import redacted_env, split_env
from orchestrator.core.spec import CommandJob, Eagle3Job, load_spec, worker_payload
from orchestrator.errors import UsageError


def spec_launch_request(
    path: Path, *, extra_env: Mapping[str, str], name: str | None, cwd: str | None, overrides: Sequence[str] = (),
    canary: bool | None = None,
) -> LaunchRequest:
    """The ``launcher.launch`` request for a validated spec file (SpecError if invalid).
    ``canary``: ``--canary``/``--no-canary`` (None: the spec's ``eagle3.canary``, on by default)."""
    return job_launch_request(load_spec(path, overrides), extra_env=extra_env, name=name, cwd=cwd, canary=canary)


def job_launch_request(
    spec: CommandJob | Eagle3Job, *, extra_env: Mapping[str, str], name: str | None, cwd: str | None,
    canary: bool | None = None,
) -> LaunchRequest:
    """``spec_launch_request`` of a spec already validated (a file's, or the one a run recorded: `eorch rerun`)."""
    if canary is not None:
        if not isinstance(spec, Eagle3Job):
            raise UsageError("--canary/--no-canary apply to an eagle3-extract spec; this spec runs a command")
        spec = spec.model_copy(update={"eagle3": spec.eagle3.model_copy(update={"canary": canary})})
    if isinstance(spec, CommandJob):
        payload = worker_payload(spec)
        payload["command"]["env"] = redacted_env(payload["command"]["env"])
        return LaunchRequest.command(spec.command.argv, env={**spec.command.env, **extra_env},
                                     cwd=cwd or spec.command.cwd, name=name or spec.name, spec=payload)
    assert isinstance(spec, Eagle3Job)
    payload = worker_payload(spec)
    # Secrets of the recipe's env leave spec.json: they reach the recipe (and the server and client it
    # starts, which inherit its environment) as the run's secret variables instead.
    public, secrets = split_env(payload["eagle3"]["env"])
    payload["eagle3"]["env"] = public
    return LaunchRequest(
        WorkerModule("worker.recipes.eagle3", (RunDirPath("spec.json"),)),
        env={**secrets, **extra_env},
        cwd=cwd,
        name=name or spec.name or "eagle3-extract",
        kind="eagle3-extract",
        spec=payload,
        files={"spec.json": json.dumps(payload, indent=2)},
        model=spec.eagle3.model,
    )


def split_launch_requests(
    path: Path, hosts: Sequence[str], *, extra_env: Mapping[str, str], name: str | None, cwd: str | None,
    overrides: Sequence[str] = (), canary: bool | None = None,
) -> list[tuple[str, LaunchRequest]]:
    """One (host, launch request) per host for an eagle3-extract spec split across them: host i extracts rank i
    of ``len(hosts)`` (contiguous shares of the dataset).  Every spec is validated before anything starts."""
    if len(set(hosts)) != len(hosts):
        raise UsageError("a host is named twice: each --host runs one rank of the split")
    base = load_spec(path, overrides)
    if not isinstance(base, Eagle3Job):
        raise UsageError("several --host split an eagle3-extract spec's dataset; a command runs on one host")
    n = len(hosts)
    stem = name or base.name or "eagle3-extract"
    return [(host, spec_launch_request(path, extra_env=extra_env, name=f"{stem}-rank{i}-of-{n}", cwd=cwd,
                                    overrides=[*overrides, f"eagle3.world_size={n}", f"eagle3.rank={i}"],
                                    canary=canary))
            for i, host in enumerate(hosts)]
