"""The monitor's pure decision: a liveness report and the stored run in, the status/phase change out."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core.runstate import RunStatus
from orchestrator.logparse.events import RootCause
from orchestrator.monitoring.decide import StoredRun, assess, settle
from orchestrator.monitoring.liveness import PENDING_GRACE_S
from worker.protocol import RunStatusReport

TRACEBACK_CAUSE = {"exception": "RuntimeError", "message": "boom", "process": "main", "traceback": "Traceback…",
                   "signature": "runtime_error"}


def report(**over: Any) -> RunStatusReport:
    base = {"run_dir": "/r/runs/ab", "exists": True, "started": True, "alive": True, "rc": None,
            "boot_changed": False, "marked_pids": [], "cancel_requested": False, "log_size": 10}
    return RunStatusReport.from_json({**base, **over})


RUNNING = StoredRun(RunStatus.RUNNING, phase="serving")
PENDING = StoredRun(RunStatus.PENDING)


class TestAssess:
    # (report, stored run, pending for, ended, drain first, launch cut off)
    TABLE = (
        pytest.param(report(), RUNNING, 1.0, False, True, False, id="alive"),
        pytest.param(report(alive=False, rc=0), RUNNING, 1.0, True, True, False, id="exited: drain first"),
        pytest.param(report(alive=False), RUNNING, 1.0, True, True, False, id="gone without rc: drain first"),
        pytest.param(report(exists=False, started=False, alive=False), RUNNING, 1.0, True, False, False,
                     id="directory gone: nothing to drain"),
        pytest.param(report(boot_changed=True, alive=False), RUNNING, 1.0, True, True, False, id="host rebooted"),
        pytest.param(report(), PENDING, 1.0, False, True, True, id="pending found alive: its launch was cut off"),
        pytest.param(report(exists=False, started=False, alive=False), PENDING, 5.0, False, True, False,
                     id="pending, nothing on the host yet: its launcher may still be at it"),
        pytest.param(report(exists=False, started=False, alive=False), PENDING, PENDING_GRACE_S + 1, True, False,
                     False, id="pending past the grace, no directory: ended, nothing to drain"),
        pytest.param(report(started=False, alive=False), PENDING, PENDING_GRACE_S + 1, True, True, False,
                     id="pending past the grace, wrapper never started"),
        pytest.param(report(started=False, alive=False), RUNNING, PENDING_GRACE_S + 1, False, True, False,
                     id="never-started is only for pending runs"),
    )

    @pytest.mark.parametrize(("rep", "stored", "pending_for", "is_ended", "drain_first", "cut_off"), TABLE)
    def test_table(self, rep: RunStatusReport, stored: StoredRun, pending_for: float, is_ended: bool,
                   drain_first: bool, cut_off: bool) -> None:
        """Each report/stored-run pair says whether the run ended, is drained first, or was cut off."""
        seen = assess(rep, stored, pending_for_s=pending_for)
        assert (seen.ended, seen.drain_first, seen.launch_cut_off) == (is_ended, drain_first, cut_off)


class TestSettle:
    # (report, stored run, log failed, status, phase, exit code)
    TABLE = (
        pytest.param(report(alive=False, rc=0), RUNNING, False, RunStatus.SUCCEEDED, "stopped", 0, id="exit 0"),
        pytest.param(report(alive=False, rc=0), RUNNING, True, RunStatus.FAILED, "failed", 0,
                     id="exit 0 but the log shows a failure"),
        pytest.param(report(alive=False, rc=1), RUNNING, False, RunStatus.FAILED, "failed", 1, id="exit 1"),
        pytest.param(report(alive=False, rc=0), StoredRun(RunStatus.RUNNING, phase="failed"), False,
                     RunStatus.SUCCEEDED, "failed", 0, id="a failed phase is never undone"),
        pytest.param(report(alive=False), RUNNING, False, RunStatus.LOST, "failed", None, id="gone without rc"),
        pytest.param(report(alive=False, boot_changed=True), RUNNING, False, RunStatus.LOST, "failed", None,
                     id="host rebooted"),
        pytest.param(report(alive=False, rc=143, cancel_requested=True), RUNNING, False, RunStatus.CANCELLED,
                     "serving", 143, id="the host holds the cancel marker: phase kept"),
        pytest.param(report(alive=False, rc=143), StoredRun(RunStatus.RUNNING, "loading", cancel_requested=True),
                     False, RunStatus.CANCELLED, "loading", 143, id="a cancel recorded here"),
    )

    @pytest.mark.parametrize(("rep", "stored", "log_failed", "status", "phase", "exit_code"), TABLE)
    def test_table(self, rep: RunStatusReport, stored: StoredRun, log_failed: bool, status: RunStatus, phase: str,
                   exit_code: int | None) -> None:
        """How an ended run ended: status, phase and exit code."""
        ending = settle(rep, assess(rep, stored).liveness, stored, log_failed=log_failed)
        assert (ending.status, ending.phase, ending.exit_code) == (status, phase, exit_code)

    def test_a_cancel_marker_on_the_host_is_recorded(self) -> None:
        """A cancel whose reply never reached its caller still counts: the run is cancel_requested."""
        rep = report(alive=False, rc=143, cancel_requested=True)
        assert settle(rep, assess(rep, RUNNING).liveness, RUNNING, log_failed=False).cancel_requested

    def test_a_kill_signal_is_the_root_cause_of_a_log_that_just_stops(self) -> None:
        """Exit 137 and no root cause from the log: SIGKILL becomes it, with its signature."""
        rep = report(alive=False, rc=137)
        found = settle(rep, assess(rep, RUNNING).liveness, RUNNING, log_failed=False).root_cause
        assert found is not None and found.sets_signature
        assert found.signature == "killed" and "SIGKILL" in found.root_cause["message"]

    def test_a_kill_after_the_log_shows_the_run_stopping_is_not_called_a_crash(self) -> None:
        """Exit 137 after the log's orderly shutdown (docker stop's grace period ran out): the root cause says the
        kill came while it stopped, not "OOM killer?"; what the kernel log check found is kept after it."""
        stopped = StoredRun(RunStatus.RUNNING, phase="stopped")
        rep = report(alive=False, rc=137)
        live = assess(rep, stopped).liveness
        found = settle(rep, live, stopped, log_failed=False).root_cause
        assert found is not None and found.signature == "killed_while_stopping"
        assert found.root_cause["message"].startswith("killed (SIGKILL) while stopping: the log shows a stop first")
        assert "OOM killer?" not in found.root_cause["message"]
        nothing = RootCause(None, "killed (SIGKILL; OOM killer?) — no OOM-killer or GPU Xid entry in the kernel "
                            "log (journalctl -k) around its end", None, None, "killed", 0)
        found = settle(rep, live, stopped, log_failed=False, killed=nothing).root_cause
        assert found is not None and found.signature == "killed_while_stopping"
        assert found.root_cause["message"].endswith("came — no OOM-killer or GPU Xid entry in the kernel log "
                                                    "(journalctl -k) around its end")
        oom = RootCause(None, "killed by the kernel's OOM killer (anon-rss 180 GiB)", None, None, "oom_killed", 40)
        found = settle(rep, live, stopped, log_failed=False, killed=oom).root_cause
        assert found is not None and found.signature == "oom_killed"

    def test_the_logs_root_cause_wins_over_the_exit_signal(self) -> None:
        """A traceback in the log is the root cause even when the process was killed afterwards."""
        stored = StoredRun(RunStatus.RUNNING, root_cause=TRACEBACK_CAUSE)
        rep = report(alive=False, rc=137)
        assert settle(rep, assess(rep, stored).liveness, stored, log_failed=True).root_cause is None

    def test_the_kernel_log_wins_over_the_shells_killed(self) -> None:
        """A job run from a script: bash writes "line 12: 4821 Killed python ..." into the log and exits 137.
        That line says no more than the exit status: what the host's kernel log says of the kill replaces it;
        with nothing from the kernel log the shell's line stays."""
        shell = {"exception": None, "message": "run.sh: line 12: 4821 Killed python serve.py", "process": "main",
                 "traceback": None, "signature": "shell_killed", "line_no": 40, "hint": None}
        stored = StoredRun(RunStatus.RUNNING, root_cause=shell)
        rep = report(alive=False, rc=137)
        oom = RootCause(None, "killed by the kernel's OOM killer (anon-rss 180 GiB)", None, None, "oom_killed", 40)
        found = settle(rep, assess(rep, stored).liveness, stored, log_failed=True, killed=oom).root_cause
        assert found is not None and found.signature == "oom_killed"
        assert settle(rep, assess(rep, stored).liveness, stored, log_failed=True).root_cause is None

    def test_the_shells_killed_keeps_its_command_when_the_kernel_log_names_nothing(self) -> None:
        """The bare exit status (a Slurm job, whose kernel log is not asked) says less than bash's line, which
        names the command: the line stays.  A kernel log read in vain adds what it found to the line."""
        shell = {"exception": None, "message": "run.sh: line 12: 4821 Killed python serve.py", "process": "main",
                 "traceback": None, "signature": "shell_killed"}
        stored = StoredRun(RunStatus.RUNNING, root_cause=shell)
        rep = report(alive=False, rc=137)
        live = assess(rep, stored).liveness
        bare = RootCause(None, "killed (SIGKILL; OOM killer?)", None, None, "killed", 0)
        assert settle(rep, live, stored, log_failed=True, killed=bare).root_cause is None
        nothing = RootCause(None, "killed (SIGKILL; OOM killer?) — no OOM-killer or GPU Xid entry in the kernel "
                            "log (journalctl -k) around its end", None, None, "killed", 0)
        found = settle(rep, live, stored, log_failed=True, killed=nothing).root_cause
        assert found is not None and found.signature == "shell_killed"
        assert found.root_cause["message"] == ("run.sh: line 12: 4821 Killed python serve.py — no OOM-killer or "
                                               "GPU Xid entry in the kernel log (journalctl -k) around its end")

    def test_a_plain_exit_status_names_no_root_cause(self) -> None:
        """Exit 1 says nothing by itself: the root cause stays as the log left it."""
        rep = report(alive=False, rc=1)
        assert settle(rep, assess(rep, RUNNING).liveness, RUNNING, log_failed=True).root_cause is None

    def test_a_vanished_directory_is_the_root_cause_with_its_reason(self) -> None:
        """Lost because its directory is gone: the reason is recorded and is the root cause (eorch's finding)."""
        rep = report(exists=False, started=False, alive=False)
        ending = settle(rep, assess(rep, RUNNING).liveness, RUNNING, log_failed=False)
        assert ending.status is RunStatus.LOST and "is gone from the host" in ending.facts["reason"]
        assert ending.root_cause is not None and not ending.root_cause.sets_signature
        assert ending.root_cause.root_cause["process"] == "eorch"
        assert ending.root_cause.root_cause["message"] == ending.facts["reason"]

    def test_a_traceback_in_the_log_stays_the_root_cause_of_a_vanished_run(self) -> None:
        """The reason is still recorded, but a traceback the log had is what show and watch print."""
        stored = StoredRun(RunStatus.RUNNING, root_cause=TRACEBACK_CAUSE)
        rep = report(exists=False, started=False, alive=False)
        ending = settle(rep, assess(rep, stored).liveness, stored, log_failed=True)
        assert "reason" in ending.facts and ending.root_cause is None

    def test_a_launch_cut_off_before_the_host_is_lost_with_why(self) -> None:
        """Pending past the grace period with no run directory: lost, its launch never reached the host."""
        rep = report(exists=False, started=False, alive=False)
        seen = assess(rep, PENDING, pending_for_s=PENDING_GRACE_S + 1)
        ending = settle(rep, seen.liveness, PENDING, log_failed=False)
        assert ending.status is RunStatus.LOST
        assert "never reached the host" in ending.facts["reason"]

    def test_the_schedulers_view_is_recorded_with_the_change(self) -> None:
        """A Slurm run's scheduler state goes into the status event's facts; a direct run has none."""
        scheduler = {"job_id": "12", "state": "COMPLETED", "reason": None, "node": "n1"}
        rep = report(alive=False, rc=0, scheduler=scheduler)
        assert settle(rep, assess(rep, RUNNING).liveness, RUNNING, log_failed=False).facts == {"scheduler": scheduler}
        plain = report(alive=False, rc=0)
        assert settle(plain, assess(plain, RUNNING).liveness, RUNNING, log_failed=False).facts == {}
