"""orchestrator.actions.rerun.plan_rerun: a run row in, the launch arguments that repeat it out (pure)."""

from __future__ import annotations

import pytest

from orchestrator.actions.rerun import HostDefaults, RerunOptions, plan_rerun
from orchestrator.errors import UsageError
from orchestrator.store.models import Run


def command_run(**kw: object) -> Run:
    values: dict[str, object] = {"id": "r1", "name": "job", "host": "gpu", "kind": "command",
                                 "command": ["python3", "train.py"], "env": {"A": "1"}, "cwd": "/w", "spec": None}
    return Run(**{**values, **kw})


class TestPlanRerun:
    def test_patch_set_and_its_interpreter(self) -> None:
        """The patch set is required again for the interpreter it was verified on (named only when not the default)."""
        run = command_run(patch_set={"name": "vllm-fix", "python": "/opt/vllm/bin/python"})
        plan = plan_rerun(run, RerunOptions(), target=HostDefaults())
        assert plan.request.patch == "vllm-fix" and plan.request.python == "/opt/vllm/bin/python"
        default = plan_rerun(command_run(env_fingerprint={"python_requested": "python3"}), RerunOptions(),
                             target=HostDefaults())
        assert default.request.python is None and default.request.patch is None

    def test_slurm_run_keeps_its_own_sbatch_options_only(self) -> None:
        """The host's sbatch options are added by the launch: the rerun carries the run's own ones only."""
        slurm = HostDefaults(scheduler="slurm", sbatch_args=("--partition=gpu",))
        plan = plan_rerun(command_run(), RerunOptions(), target=slurm, original=slurm,
                          sbatch_recorded=["--partition=gpu", "--gres=gpu:8"])
        assert list(plan.request.sbatch_args) == ["--gres=gpu:8"]
        direct = plan_rerun(command_run(), RerunOptions(host="box"), target=HostDefaults(), original=slurm,
                            sbatch_recorded=["--partition=gpu", "--gres=gpu:8"])
        assert list(direct.request.sbatch_args) == [] and direct.host == "box"

    def test_refuses_eorchs_own_jobs(self) -> None:
        with pytest.raises(UsageError, match="eorch started for itself"):
            plan_rerun(command_run(kind="tool"), RerunOptions(), target=HostDefaults())
