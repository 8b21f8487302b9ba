"""What to launch, as one value: the CLI, the TUI's launch form, job specs and tool jobs build a ``LaunchRequest``;
``launcher.launch`` starts it. Pure: no I/O.

The program is either a command (argv as the user gave it, never rewritten) or one of eorch's own worker
modules (``WorkerModule``), whose interpreter, importable worker copy and run-directory arguments are only
known once the host session is open: ``resolve`` turns it into argv and env then.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.errors import UsageError


@dataclass(frozen=True)
class RunDirPath:
    """An argument naming a path in the run's own directory on the host (``""``: the directory itself)."""

    name: str = ""

    def under(self, run_dir: str) -> str:
        return f"{run_dir}/{self.name}" if self.name else run_dir


@dataclass(frozen=True)
class WorkerModule:
    """``PYTHON -m MODULE ARGS`` with the uploaded worker copy importable (its PYTHONPATH)."""

    module: str
    args: tuple[str | RunDirPath, ...] = ()
    python: str | None = None  # None: the host's interpreter

    def shown(self) -> list[str]:
        """Its argv in words, before a host fills it in: ``<python> -m worker.recipes.eagle3 <run dir>/spec.json``."""
        return [self.python or "<python>", "-m", self.module,
                *(a.under("<run dir>") if isinstance(a, RunDirPath) else a for a in self.args)]


Program = tuple[str, ...] | WorkerModule


@dataclass(frozen=True)
class LaunchRequest:
    """Everything a launch needs besides the host.

    ``kind``: ``command`` or a recipe (``eagle3-extract``, ``tool``); ``spec``: the validated job spec as stored
    on the run; ``files``: written into the run directory before the start. ``python`` / ``patch`` /
    ``apply_patches``: the code the run runs (orchestrator.actions.patches). ``secret_env`` reaches the job but is
    recorded only as ``<redacted>``. ``preflight``, ``gpu_locks``, ``force_locks``: set by a checked launch.
    ``rerun_of``: the run this one repeats (orchestrator.actions.rerun).
    """

    program: Program
    name: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    kind: str = "command"
    spec: dict[str, Any] | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    python: str | None = None
    patch: str | None = None
    apply_patches: bool = False
    sbatch_args: tuple[str, ...] = ()
    secret_env: Mapping[str, str] = field(default_factory=dict)
    preflight: dict[str, Any] | None = None
    gpu_locks: tuple[int, ...] = ()
    force_locks: bool = False
    rerun_of: str | None = None

    @classmethod
    def command(cls, argv: list[str] | tuple[str, ...], **fields: Any) -> LaunchRequest:
        return cls(tuple(argv), **fields)

    def shown_argv(self) -> list[str]:
        """The command as the user should read it (a worker module's placeholders in words)."""
        return self.program.shown() if isinstance(self.program, WorkerModule) else list(self.program)


def resolve(program: Program, *, host_python: str, worker_dir: str, run_dir: str) -> tuple[list[str], dict[str, str]]:
    """The argv to start on the host and the environment it needs (a worker module: the worker on its path)."""
    if not isinstance(program, WorkerModule):
        return list(program), {}
    args = [a.under(run_dir) if isinstance(a, RunDirPath) else a for a in program.args]
    return [program.python or host_python, "-m", program.module, *args], {"PYTHONPATH": worker_dir}


ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env(pairs: Sequence[str], option: str = "--env") -> dict[str, str]:
    """``KEY=VALUE`` words (``--env``, ``--secret-env``) as a mapping; a UsageError names a bad one (not its value)."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not ENV_KEY_RE.match(key):
            raise UsageError(f"bad {option} {key!r}: expected KEY=VALUE with KEY like MY_VAR")  # no value: a secret
        env[key] = value
    return env
