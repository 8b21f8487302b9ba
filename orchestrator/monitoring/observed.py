"""Record what a liveness answer says about a run besides its status: when it was checked, when it last wrote.

Called by the monitor for each run on every liveness round. ``checked_at`` is the "as of" of the run's
status; ``last_output_at`` (from the log's and step events' mtimes on the host) is the stall clock, so it
survives monitor restarts and is not reset by reading a backlog.
"""

from __future__ import annotations

from datetime import datetime

from orchestrator.context import Context
from orchestrator.core.freshness import output_time
from orchestrator.store import queries
from orchestrator.store.queries import utcnow
from worker.protocol import RunStatusReport

# A run's check time is rewritten at most this often while nothing else changes (one write, not one per poll).
CHECKED_EVERY_S = 5.0


def record_observation(ctx: Context, run_id: str, live: RunStatusReport,
                       host_now: float | None) -> datetime | None:
    """Record the check and the last output; return when the process ended (its rc file's time), if it did."""
    now = utcnow()
    wrote = output_time({"log_mtime": live.log_mtime, "events_mtime": live.events_mtime}, host_now, now)
    ended = output_time({"log_mtime": live.rc_mtime}, host_now, now)
    with ctx.db() as s:
        run = queries.run_row(s, run_id)
        if run is None:
            return ended
        moved = wrote is not None and (run.last_output_at is None
                                       or abs((wrote - run.last_output_at).total_seconds()) >= 1.0)
        if moved:
            run.last_output_at = wrote
        if moved or run.checked_at is None or (now - run.checked_at).total_seconds() >= CHECKED_EVERY_S:
            run.checked_at = now
    return ended
