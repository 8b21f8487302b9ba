"""`eorch rerun` (and `r` in the TUI): the same thing launched again, through the same path as `eorch launch`.

A command run starts again from what its row recorded: argv, env, cwd, host, patch set, interpreter and a Slurm
run's own sbatch options. An eagle3-extract run starts again from the spec it recorded (the ``spec.json`` it
ran, split ranks and ``--set`` overrides included): the TOML file it came from may have changed or gone since,
the recorded spec is what ran. Its preflight runs again first, as for `eorch launch --spec`.

Secret variables were never recorded (orchestrator.core.secretenv): they must be given again, or the rerun is refused
before anything starts. The new run records ``rerun_of``.

``plan_rerun`` is pure (a run row and host defaults in, a ``LaunchRequest`` out); ``load_plan`` reads the history;
``rerun`` launches.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from orchestrator.actions.patches import run_pythons
from orchestrator.context import Context
from orchestrator.core.launchrequest import LaunchRequest
from orchestrator.core.secretenv import REDACTED
from orchestrator.errors import NotFound, SpecError, UsageError
from orchestrator.store.models import Host

if TYPE_CHECKING:
    from orchestrator.preflight import Report
    from orchestrator.store.models import Run

#: Kinds a rerun can repeat; others (``tool``: eorch's own jobs) are rerun by the eorch command that made them.
RERUNNABLE = ("command", "eagle3-extract")


@dataclass(frozen=True)
class HostDefaults:
    """What a launch on a host takes from the host itself."""

    python: str = "python3"
    scheduler: str = "direct"
    sbatch_args: tuple[str, ...] = ()

    @classmethod
    def of(cls, host: Host) -> HostDefaults:
        return cls(host.python or "python3", host.scheduler or "direct", tuple(host.sbatch_args or ()))


@dataclass(frozen=True)
class RerunOptions:
    """What the user changes in a rerun (nothing, by default)."""

    host: str | None = None
    name: str | None = None
    secret_env: Mapping[str, str] = field(default_factory=dict)
    patch: str | None = None
    apply_patches: bool = False
    canary: bool | None = None


@dataclass(frozen=True)
class RerunPlan:
    original: str
    original_name: str
    host: str
    request: LaunchRequest  # for launcher.launch(ctx, host, request)

    @property
    def kind(self) -> str:
        return self.request.kind

    def describe(self) -> str:
        """What will run, in a few lines (no secret: their values are never in a plan's description)."""
        r = self.request
        what = (f"{self.kind} spec" + (f" (model {r.model})" if r.model else "")
                if self.kind != "command" else shlex.join(r.shown_argv()))
        lines = [f"rerun of {self.original} ({self.original_name}) on {self.host}: {what}"]
        if r.name:
            lines.append(f"name {r.name}")
        if r.cwd:
            lines.append(f"cwd {r.cwd}")
        if r.env:  # a recipe's PYTHONPATH is not in it: the launch puts eorch's worker there (WorkerModule)
            lines.append("env " + " ".join(f"{key}={shlex.quote(v)}" for key, v in r.env.items()))
        if r.secret_env:
            lines.append("secret env " + " ".join(sorted(r.secret_env)))
        if r.patch:
            lines.append(f"patch set {r.patch}" + (" (applied if needed)" if r.apply_patches else ""))
        if r.sbatch_args:
            lines.append("sbatch " + shlex.join(r.sbatch_args))
        return "\n".join(lines)


def plan_rerun(run: Run, options: RerunOptions, *, target: HostDefaults, original: HostDefaults | None = None,
               sbatch_recorded: Sequence[str] = ()) -> RerunPlan:
    """The launch request that repeats ``run``; UsageError (nothing started) when it cannot be repeated as is.

    ``target``/``original``: the defaults of the host the rerun goes to and of the one the run ran on;
    ``sbatch_recorded``: the sbatch options the run was submitted with (the host's, then its own)."""
    if run.kind not in RERUNNABLE:
        raise UsageError(f"run {run.id} is a {run.kind} job eorch started for itself; run the eorch command that "
                         "started it again")
    recorded_env = dict(run.env or {})
    missing = sorted(k for k, v in recorded_env.items() if v == REDACTED and k not in options.secret_env)
    if missing:
        raise UsageError(f"run {run.id} had secret variables that are never recorded ({', '.join(missing)}): give "
                         f"them again, e.g. eorch rerun {run.id} --secret-env {missing[0]}=VALUE; nothing was started")
    env = {k: v for k, v in recorded_env.items() if v != REDACTED and k not in options.secret_env}
    name = options.name or run.name
    if run.kind == "eagle3-extract":
        request = _recipe_request(run, env, name, options.canary)
    else:
        if options.canary is not None:
            raise UsageError("--canary/--no-canary apply to an eagle3-extract run; this one ran a command")
        request = LaunchRequest.command(list(run.command), env=env, cwd=run.cwd, name=name, spec=run.spec)
    host = options.host or run.host
    requested = (run.patch_set or {}).get("python") or (run.env_fingerprint or {}).get("python_requested")
    default = run_pythons(list(run.command) if run.kind == "command" else [], request.spec, None,
                          (original or target).python)[0]
    patch = options.patch or (run.patch_set or {}).get("name")
    request = replace(
        request,
        python=None if requested in (None, default) else requested,
        patch=patch,
        apply_patches=options.apply_patches,
        secret_env=dict(options.secret_env),
        sbatch_args=_own_sbatch_args(sbatch_recorded, original) if target.scheduler == "slurm" else (),
        rerun_of=run.id,
    )
    return RerunPlan(run.id, run.name, host, request)


def _recipe_request(run: Run, env: dict[str, str], name: str, canary: bool | None) -> LaunchRequest:
    from orchestrator.actions.speclaunch import job_launch_request
    from orchestrator.core.spec import parse_spec

    if not run.spec:
        raise UsageError(f"run {run.id} recorded no spec to run again; launch its spec file with eorch launch --spec")
    try:
        spec = parse_spec(dict(run.spec), source=f"recorded by run {run.id}")
    except SpecError as err:
        raise SpecError(f"{err} (eorch no longer takes it as it was; launch a spec file with eorch launch --spec)") \
            from None
    # PYTHONPATH was eorch's own worker directory, given at launch: the recipe's WorkerModule gives it again.
    extra = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return job_launch_request(spec, extra_env=extra, name=name, cwd=run.cwd, canary=canary)


def _own_sbatch_args(recorded: Sequence[str], original: HostDefaults | None) -> tuple[str, ...]:
    """The run's own sbatch options: what it was submitted with, less its host's (which the launch adds)."""
    host_args = tuple(original.sbatch_args) if original else ()
    if host_args and tuple(recorded[:len(host_args)]) == host_args:
        return tuple(recorded[len(host_args):])
    return tuple(recorded)


def load_plan(ctx: Context, ref: str, options: RerunOptions | None = None) -> RerunPlan:
    """The plan for the run ``ref`` (id, prefix or name) from the history; NotFound / UsageError if none."""
    from orchestrator.store import queries

    options = options or RerunOptions()
    with ctx.db() as s:
        run = queries.get_run(s, ref)
        original_row = queries.host_row(s, run.host)
        target_name = options.host or run.host
        target_row = original_row if target_name == run.host else queries.host_row(s, target_name)
        if target_row is None:
            raise NotFound(f"unknown host {target_name!r} (see `eorch host list`); give another with --host")
        sbatch: list[str] = next((e.data["sbatch_args"] for e in queries.events_of(s, run.id, kinds=("status",))
                                  if isinstance(e.data, dict) and e.data.get("sbatch_args")), [])
        return plan_rerun(run, options, target=HostDefaults.of(target_row),
                          original=HostDefaults.of(original_row) if original_row else None, sbatch_recorded=sbatch)


async def rerun(ctx: Context, plan: RerunPlan, *, checks: bool = True, force: bool = False) -> tuple[Run, Report | None]:
    """Launch the plan as `eorch launch` would: an eagle3-extract spec after its preflight (unless ``checks`` is
    off; ``force`` launches despite a failed check), a command at once. Returns the new run and the report."""
    from orchestrator.actions.launcher import launch

    if plan.kind == "eagle3-extract" and checks:
        from orchestrator.actions.preflightrun import launch_checked

        return await launch_checked(ctx, plan.host, plan.request, force=force)
    return await launch(ctx, plan.host, plan.request), None
