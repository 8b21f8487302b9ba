"""`--canary/--no-canary` and `--keep-server` on `eorch launch`: what reaches the host's spec, and misuse refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.actions.speclaunch import spec_launch_request, split_launch_requests
from orchestrator.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "examples" / "demo-tiny-llama.toml"
COMMAND = REPO / "deploy" / "examples" / "command.toml"


def payload(**kw: object) -> dict[str, object]:
    request = spec_launch_request(DEMO, extra_env={}, name=None, cwd=None, **kw)  # type: ignore[arg-type]
    assert request.spec is not None
    return dict(request.spec["eagle3"])


class TestSpecFlags:
    def test_canary_and_gate_on_by_default_keep_server_off(self) -> None:
        p = payload()
        assert p["canary"] is True and p["canary_samples"] == 4 and p["first_sample_gate"] is True
        assert p["keep_server"] is False and p["keep_server_idle_s"] == 1800.0

    def test_no_canary_overrides_the_spec(self) -> None:
        assert payload(canary=False)["canary"] is False
        assert payload(overrides=["eagle3.canary=false"], canary=True)["canary"] is True

    def test_split_runs_carry_the_flag(self) -> None:
        plans = split_launch_requests(DEMO, ["a", "b"], extra_env={}, name=None, cwd=None, canary=False)
        assert [(p.spec or {})["eagle3"]["canary"] for _, p in plans] == [False, False]

    def test_canary_flag_on_a_command_spec_is_refused(self) -> None:
        with pytest.raises(UsageError, match="eagle3-extract"):
            spec_launch_request(COMMAND, extra_env={}, name=None, cwd=None, canary=True)


@pytest.mark.parametrize("flag", ["--no-canary", "--canary", "--keep-server"])
def test_flags_with_a_command_are_one_line_errors(tmp_path: Path, flag: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", "launch", flag, "--", "true"],
                          capture_output=True, text=True, env={**os.environ, "EORCH_HOME": str(tmp_path)},
                          timeout=60, check=False)
    assert proc.returncode != 0 and "not to a command" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    listed = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", "runs", "--json"], capture_output=True,
                            text=True, env={**os.environ, "EORCH_HOME": str(tmp_path)}, timeout=60, check=True)
    assert listed.stdout.strip() == "[]", "nothing was recorded"
