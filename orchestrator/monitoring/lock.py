"""Take the monitor lock and follow the runs, or, when another process holds it, read the history instead.

The one place for that choice (``eorch watch``, ``eorch daemon``, the TUI, tool jobs and cancel all make
it): whoever holds the lock records for everyone; the others only read. A reading command's short refresh
holding the lock is waited for up to ``wait_s`` (``orchestrator.monitoring.lockfile``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from orchestrator.errors import MonitorBusy
from orchestrator.monitoring.lockfile import REFRESH_WAIT_S, MonitorLock

T = TypeVar("T")


async def follow_or_read(lock_path: Path, follow: Callable[[], Awaitable[T]],
                         read: Callable[[MonitorBusy], Awaitable[T]] | None = None, *,
                         wait_s: float = REFRESH_WAIT_S) -> T:
    """``follow()`` while holding the lock (released however it ends); else ``read(busy)``, whose
    argument says who holds it. Without ``read``, a held lock is the ``MonitorBusy`` error."""
    lock = MonitorLock(lock_path)
    try:
        lock.acquire(wait_s)
    except MonitorBusy as busy:
        if read is None:
            raise
        return await read(busy)
    try:
        return await follow()
    finally:
        lock.release()
