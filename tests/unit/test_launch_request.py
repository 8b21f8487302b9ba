"""A launch is one typed request (orchestrator.core.launchrequest): a worker module is resolved once the host is known,
and nothing the user wrote is ever rewritten (the old ``{python}``/``{worker}`` placeholders were str.replace'd
into every argv word and env value of a recipe, the user's own included)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.actions.speclaunch import spec_launch_request
from orchestrator.core.launchrequest import LaunchRequest, RunDirPath, WorkerModule, resolve

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "examples" / "demo-tiny-llama.toml"
HOST = {"host_python": "/usr/bin/python3.9", "worker_dir": "/r/worker/abc", "run_dir": "/r/runs/7"}


class TestResolve:
    def test_a_worker_module_gets_the_host_python_its_run_dir_and_the_worker(self) -> None:
        program = WorkerModule("worker.setup_engine", ("--requirements-dir", RunDirPath(), "--x", RunDirPath("f")))
        argv, env = resolve(program, **HOST)
        assert argv == ["/usr/bin/python3.9", "-m", "worker.setup_engine", "--requirements-dir", "/r/runs/7",
                        "--x", "/r/runs/7/f"]
        assert env == {"PYTHONPATH": "/r/worker/abc"}

    def test_an_explicit_python_wins(self) -> None:
        assert resolve(WorkerModule("worker.convert_legacy", ("d",), python="/opt/py"), **HOST)[0][0] == "/opt/py"

    def test_a_command_is_never_rewritten(self) -> None:
        """Words that looked like the old placeholders are the user's, kept as typed."""
        argv, env = resolve(("echo", "{python}", "{run_dir}/x"), **HOST)
        assert argv == ["echo", "{python}", "{run_dir}/x"] and env == {}


class TestSpecRequest:
    def test_a_recipe_runs_its_worker_module_on_the_run_s_spec_json(self) -> None:
        request = spec_launch_request(DEMO, extra_env={"MINE": "{worker}"}, name=None, cwd=None)
        assert request.program == WorkerModule("worker.recipes.eagle3", (RunDirPath("spec.json"),))
        assert request.kind == "eagle3-extract" and "spec.json" in request.files
        assert request.env["MINE"] == "{worker}"  # the user's value, not the worker's path
        assert request.shown_argv() == ["<python>", "-m", "worker.recipes.eagle3", "<run dir>/spec.json"]

    def test_a_command_request_keeps_its_argv(self) -> None:
        assert LaunchRequest.command(["python", "train.py"]).shown_argv() == ["python", "train.py"]
