"""What the user typed reaches the job as typed, through the loopback sshd. eorch once filled its own
``{python}``/``{worker}``/``{run_dir}`` placeholders into a recipe's or a tool's argv and env with str.replace, so a
user's word or env value holding that text reached the job as a host path (orchestrator.core.launchrequest now names
eorch's own parts as values: WorkerModule, RunDirPath)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import add_testbox, eorch, show

WORDS = "{python}-{worker}-{run_dir}"


def test_a_tool_argument_that_looks_like_a_placeholder_reaches_the_tool(eorch_home: Path, tmp_path: Path) -> None:
    """convert-legacy's DIR is the user's word: the tool looks in that very directory (an empty one here)."""
    add_testbox(tmp_path)
    src = tmp_path / f"legacy-{WORDS}"
    src.mkdir()
    out = eorch("convert-legacy", str(src), "--host", "gpu", "--python", sys.executable, "--json", check=False)
    assert out.returncode == 1, out.stderr
    report, _ = json.JSONDecoder().raw_decode(out.stdout)  # a failed tool's end is said after the JSON
    assert report["summary"] == {"ok": False, "error": f"no data_*.pt in {src}"}
    run = show(report["run"])
    assert str(src) in run["command"] and run["kind"] == "tool"


def test_a_recipe_env_value_that_looks_like_a_placeholder_reaches_the_job(eorch_home: Path, tmp_path: Path) -> None:
    """An eagle3-extract run's --env value is the user's: recorded and handed to the host's launch as typed, while
    eorch's own PYTHONPATH (its worker copy) and the recipe's spec.json path are filled in for the host."""
    root = add_testbox(tmp_path)
    spec = tmp_path / "job.toml"
    spec.write_text(
        'kind = "eagle3-extract"\nname = "words"\n[eagle3]\n'
        f'model = "{tmp_path / "no-model"}"\ndata = "{tmp_path / "no-data"}"\noutput = "{tmp_path / "out"}"\n'
        f'vllm_python = "{sys.executable}"\nspeculators_python = "{sys.executable}"\ncanary = false\n'
    )
    out = eorch("launch", "--host", "gpu", "--spec", str(spec), "--no-preflight", "--json", "--env", f"MINE={WORDS}")
    run = show(json.loads(out.stdout)["id"])
    assert run["env"]["MINE"] == WORDS
    meta = json.loads((Path(run["remote_dir"]) / "meta.json").read_text())
    assert meta["env"]["MINE"] == WORDS
    assert meta["env"]["PYTHONPATH"].startswith(str(root)) and "{" not in meta["env"]["PYTHONPATH"]
    assert run["command"][1:] == ["-m", "worker.recipes.eagle3", f"{run['remote_dir']}/spec.json"]
    eorch("cancel", run["id"], check=False)
