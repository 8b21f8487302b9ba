"""A followed run killed by SIGKILL (exit 137): ask its host's kernel log why, before the verdict is recorded.

The monitor calls ``killed_root_cause`` once, when it settles an ended run; only a SIGKILL that no cancel of
eorch's explains (and not a Slurm job: its kernel log is the compute node's) costs a call to the host's
``kernlog`` op (on a channel of its own, so the agent stays free for liveness).  What the lines mean is the
pure ``logparse.kernel.killed_cause``; a host that cannot answer is said so in the root cause, never
raised.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from orchestrator.errors import EorchError
from orchestrator.logparse import exit_root_cause
from orchestrator.logparse.events import RootCause
from orchestrator.logparse.exits import exit_signal, names_only_a_signal
from orchestrator.logparse.kernel import killed_cause
from orchestrator.monitoring.liveness import cancel_reached_host
from orchestrator.remote.hosts import HostSession
from orchestrator.store.models import Run
from worker.protocol import RunStatusReport

log = logging.getLogger("eorch.kernelevidence")

#: The op runs its tools with their own limit (worker/kernlog.py); this bounds the whole call.
CALL_TIMEOUT_S = 45.0


async def killed_root_cause(session: HostSession, run: Run, live: RunStatusReport) -> RootCause | None:
    """The root cause the exit status ``live.rc`` names (None for a plain exit), with the kernel log's
    evidence when it is SIGKILL."""
    cause = exit_root_cause(live.rc)
    if (cause is None or exit_signal(live.rc) != signal.SIGKILL or not names_only_a_signal(run.root_cause)
            or cancel_reached_host(live) or live.scheduler):
        return cause
    try:
        report = await asyncio.wait_for(session.call_once("kernlog", run_dir=session.run_dir(run.id)),
                                        CALL_TIMEOUT_S)
    except (EorchError, OSError, TimeoutError) as err:
        log.warning("run %s: the kernel log of %s could not be asked: %r", run.id, session.name, err)
        report = {"source": None, "unreadable": [f"the host did not answer ({type(err).__name__}: {err})"[:200]]}
    return killed_cause(report)
