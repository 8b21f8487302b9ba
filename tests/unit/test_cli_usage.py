"""Usage mistakes get one line (what is wrong, where the help is) and exit 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "args, needle",
    [(("show",), "Missing argument 'run'"), (("search",), "Missing argument"), (("nosuchcmd",), "No such command"),
     (("runs", "--limit", "many"), "Invalid value"), (("log", "analyze", "--exit-code", "x", "f"), "--exit-code"),
     (("log", "analyze", "--nope", "f"), "No such option: --nope")],
)
def test_usage_error_is_short_and_exits_2(tmp_path, args: tuple[str, ...], needle: str) -> None:
    """The mistake is named, with the command whose --help tells more; no Python traceback reaches the user."""
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, "EORCH_HOME": str(tmp_path)}, timeout=60, check=False)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "--help'" in proc.stderr
