"""The host's liveness report for one run (``worker.ops.status``) as the facts the monitor judges by.

Pure. The report is the protocol's ``RunStatusReport`` (worker/protocol.py); this is where its fields become a
``runstate.Liveness`` and, for a run whose directory is gone from the host, the reason recorded with its
``lost`` status.
"""

from __future__ import annotations

from typing import Any

from orchestrator.core.runstate import Liveness
from worker.protocol import RunStatusReport

# A run stays ``pending`` while its launcher starts it (orchestrator.actions.launcher records it first); one still pending
# with nothing on the host after this long was cut off before it started.
PENDING_GRACE_S = 300.0


def liveness_from(report: RunStatusReport, *, pending_for_s: float | None = None) -> Liveness:
    """``pending_for_s``: how long ago a ``pending`` run was recorded (None for a run known to be started)."""
    started, rc = report.started, report.rc
    not_seen_started = pending_for_s is not None and not started and rc is None
    if not_seen_started and pending_for_s is not None and pending_for_s < PENDING_GRACE_S:
        return Liveness(started=False, alive=False, rc=None)  # its launcher may still be at it
    return Liveness(
        started=started,
        alive=report.alive,
        rc=rc,
        boot_changed=report.boot_changed,
        vanished=not report.exists,
        never_started=not_seen_started,
    )


def cancel_reached_host(report: RunStatusReport) -> bool:
    """The host holds the run's cancel marker: a cancel reached it (whether or not its caller heard back)."""
    return report.cancel_requested


def lost_reason(live: Liveness, report: RunStatusReport) -> str | None:
    """Why a run is ``lost`` when the host cannot say how it ended, and what of it may still be running."""
    if live.never_started:
        if live.vanished:
            return "its launch never reached the host (no run directory; the launcher was cut off)"
        return "its wrapper never started (see wrapper.err in the run directory)"
    if not live.vanished:
        return None
    text = f"its run directory {report.run_dir} is gone from the host (removed by a cleanup or a reinstall)"
    pids = report.marked_pids
    if pids:
        text += f"; {len(pids)} of its processes still run (pids {', '.join(map(str, pids[:8]))}): eorch cannot " \
                "follow them; kill them on the host"
    return text


def lost_root_cause(reason: str) -> dict[str, Any]:
    """The ``root_cause`` of a run lost for ``reason`` (eorch's own finding, not the job's log)."""
    return {"exception": None, "message": reason, "process": "eorch", "traceback": None, "signature": None}
