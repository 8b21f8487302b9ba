"""The host's liveness report for one run (``worker.ops.status``) as the facts the monitor judges by.

Pure. The report is a JSON dict; this is where its fields become a ``runstate.Liveness`` and, for a run
whose directory is gone from the host, the reason recorded with its ``lost`` status.
"""

from __future__ import annotations

from typing import Any

from orchestrator.runstate import Liveness


def liveness_from(report: dict[str, Any]) -> Liveness:
    return Liveness(
        started=bool(report["started"]),
        alive=bool(report["alive"]),
        rc=report["rc"],
        boot_changed=bool(report["boot_changed"]),
        vanished=report.get("exists") is False,
    )


def cancel_reached_host(report: dict[str, Any]) -> bool:
    """The host holds the run's cancel marker: a cancel reached it (whether or not its caller heard back)."""
    return bool(report.get("cancel_requested"))


def vanished_reason(report: dict[str, Any]) -> str:
    """Why a run whose directory is gone is ``lost``, and what of it may still be running."""
    text = f"its run directory {report.get('run_dir')} is gone from the host (removed by a cleanup or a reinstall)"
    pids = report.get("marked_pids") or []
    if pids:
        text += f"; {len(pids)} of its processes still run (pids {', '.join(map(str, pids[:8]))}): eorch cannot " \
                "follow them; kill them on the host"
    return text
