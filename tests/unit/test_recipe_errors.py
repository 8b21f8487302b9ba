"""How a recipe's step message shows a child's exit status (``worker.recipes.errors.exit_text``): a server the OOM
killer took reads as such in ``[eorch] result: FAILED: ...``, not as a bare ``-9``."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from worker.recipes.errors import exit_text


@pytest.mark.parametrize(("rc", "text"), [(0, "0"), (1, "1"), (-99, "-99"), (-15, "-15: killed by SIGTERM")])
def test_an_exit_status_reads_as_its_signal_when_one_ended_it(rc: int, text: str) -> None:
    assert exit_text(rc) == text


def test_a_child_killed_by_sigkill_reads_as_the_oom_killers_work() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child.send_signal(signal.SIGKILL)
    assert exit_text(child.wait(timeout=30)) == "-9: killed by SIGKILL (the OOM killer?)"
