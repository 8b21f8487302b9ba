"""The monitor lock: one process follows runs at a time (an flock in $EORCH_HOME); others only read.

The file says who holds it (``pid N`` for a monitor, ``refresh pid N`` for a reading command bringing its
runs up to date for a moment), so a launch can tell a monitor that will follow its run from a short refresh.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Self

from orchestrator.errors import MonitorBusy

REFRESH_ROLE = "refresh"
# A refresh holds the lock for one bounded liveness round; whoever wants it meanwhile waits this long at most.
REFRESH_WAIT_S = 20.0
RETRY_S = 0.1
PROBE_S = 0.3


class MonitorLock:
    """One monitor follows runs at a time (an flock in $EORCH_HOME); others only read the history."""

    def __init__(self, path: Path, role: str = "") -> None:
        self.path = path
        self.role = role
        self._fd: int | None = None

    def acquire(self, wait_s: float = REFRESH_WAIT_S) -> None:
        """Take the lock; a reading command's refresh holding it is waited for (up to ``wait_s``), a monitor not."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as err:
                holder, waited = holder_of(self.path), time.monotonic() - start
                # monitor_holds() probes the lock for an instant, leaving the last holder's words in the file.
                if waited < PROBE_S or holder.startswith(REFRESH_ROLE) and waited < wait_s:
                    time.sleep(RETRY_S)
                    continue
                os.close(fd)
                raise MonitorBusy(f"runs are already being followed by {holder or 'another process'}; it records "
                                  "for everyone") from err
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.role + ' ' if self.role else ''}pid {os.getpid()}".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder_of(path: Path) -> str:
    """What the lock file says about its holder ("pid 123", "refresh pid 123"); "" if nothing."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def monitor_holds(path: Path) -> bool:
    """Whether a monitor (not a passing refresh) holds the lock now."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return not holder_of(path).startswith(REFRESH_ROLE)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
