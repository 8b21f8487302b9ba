"""`eorch launch` makes sure the run is followed: a running monitor, a background one started now, or a plain
statement that nothing will record its end or alert.

The background monitor is ``eorch daemon --until-idle``, detached in its own session with its output in
``$EORCH_HOME/monitor.log``: it follows every active run, raises alerts, and exits once none is active.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from orchestrator.config import Settings
from orchestrator.monitoring.lockfile import holder_of, monitor_holds


@dataclass(frozen=True)
class Following:
    state: str  # "running" (a monitor follows already), "started" (we started one), "none"
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"state": self.state, "detail": self.detail}


def monitor_log(settings: Settings) -> str:
    return str(settings.home / "monitor.log")


def ensure_followed(settings: Settings, *, opt_out: bool) -> Following:
    lock = settings.monitor_lock
    if monitor_holds(lock):
        return Following("running", f"followed by the running monitor ({holder_of(lock) or 'another process'})")
    if opt_out or not settings.config.monitor.auto_start:
        why = "--no-monitor" if opt_out else "[monitor] auto_start = false"
        return Following("none", f"no monitor is running ({why}): nothing records how it ends and nothing alerts; "
                         "follow it with `eorch watch --all` or `eorch daemon install`")
    argv = [sys.executable, "-m", "orchestrator.cli.main", "daemon", "--until-idle"]
    with open(monitor_log(settings), "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=settings.home,
                                start_new_session=True, close_fds=True, env=dict(os.environ))
    return Following("started", f"followed by a background monitor (pid {proc.pid}) until no run is active; it "
                     f"raises alerts (log: {monitor_log(settings)})")
