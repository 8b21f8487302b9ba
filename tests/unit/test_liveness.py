"""The host's liveness report as the facts the monitor judges by (orchestrator.monitoring.liveness)."""

from __future__ import annotations

from typing import Any

from orchestrator.core.runstate import RunStatus, ended, status_from_liveness
from orchestrator.monitoring.liveness import PENDING_GRACE_S, cancel_reached_host, liveness_from, lost_reason
from worker.protocol import RunStatusReport


def report(**over: Any) -> RunStatusReport:
    base = {"run_dir": "/r/runs/ab", "exists": True, "started": True, "alive": True, "rc": None,
            "boot_changed": False, "marked_pids": [], "cancel_requested": False}
    return RunStatusReport.from_json({**base, **over})


def verdict(rep: RunStatusReport, pending_for_s: float | None = None) -> RunStatus | None:
    live = liveness_from(rep, pending_for_s=pending_for_s)
    return status_from_liveness(live, cancel_requested=False, log_failed=False) if ended(live) else None


class TestVanishedDirectory:
    def test_a_run_whose_directory_is_gone_is_lost_with_the_reason(self) -> None:
        """No directory, no wrapper file, no rc: not "not started yet" but lost, and why."""
        rep = report(exists=False, started=False, alive=False)
        assert verdict(rep) is RunStatus.LOST
        reason = lost_reason(liveness_from(rep), rep)
        assert reason is not None and "/r/runs/ab is gone from the host" in reason

    def test_processes_still_running_without_their_directory_are_named(self) -> None:
        """The job may outlive its directory: the reason says so, with the pids."""
        rep = report(exists=False, started=False, alive=False, marked_pids=[41, 42])
        assert "2 of its processes still run (pids 41, 42)" in (lost_reason(liveness_from(rep), rep) or "")


class TestPendingRuns:
    def test_a_pending_run_with_nothing_on_the_host_yet_is_left_to_its_launcher(self) -> None:
        """Recorded first, started next: within the grace period an empty host proves nothing."""
        rep = report(exists=False, started=False, alive=False)
        assert verdict(rep, pending_for_s=5) is None

    def test_a_pending_run_never_started_after_the_grace_period_is_lost(self) -> None:
        """Its launcher was cut off before the host saw it."""
        rep = report(exists=False, started=False, alive=False)
        live = liveness_from(rep, pending_for_s=PENDING_GRACE_S + 1)
        assert verdict(rep, pending_for_s=PENDING_GRACE_S + 1) is RunStatus.LOST
        assert "never reached the host" in (lost_reason(live, rep) or "")

    def test_a_pending_run_the_host_shows_ended_is_judged_by_its_rc(self) -> None:
        """The start was not recorded, but the wrapper ran and wrote rc 0."""
        assert verdict(report(alive=False, rc=0), pending_for_s=1) is RunStatus.SUCCEEDED


class TestCancelMarker:
    def test_the_host_marker_is_the_cancel_evidence(self) -> None:
        """Only a cancel that reached the host left its marker there."""
        assert cancel_reached_host(report(cancel_requested=True))
        assert not cancel_reached_host(report())
