"""Take the monitor lock and follow, else read the history: the one helper (orchestrator.monitoring.lock)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.errors import MonitorBusy
from orchestrator.monitoring.lock import follow_or_read
from orchestrator.monitoring.lockfile import REFRESH_ROLE, MonitorLock, holder_of, monitor_holds


class TestFollowOrRead:
    async def test_a_free_lock_is_held_while_following_and_released_after(self, tmp_path: Path) -> None:
        """Nobody holds it: ``follow`` runs holding the lock (a monitor, by this pid); the reader is not called."""
        path = tmp_path / "monitor.lock"
        seen: list[tuple[bool, str]] = []

        async def follow() -> str:
            seen.append((monitor_holds(path), holder_of(path)))
            return "followed"

        async def read(busy: MonitorBusy) -> str:
            raise AssertionError("read while the lock was free")

        assert await follow_or_read(path, follow, read) == "followed"
        assert seen == [(True, f"pid {os.getpid()}")]
        assert not monitor_holds(path)

    async def test_a_held_lock_reads_the_history_and_says_who_holds_it(self, tmp_path: Path) -> None:
        """Another monitor holds it: ``read`` runs with the error naming the holder; ``follow`` never does."""
        path = tmp_path / "monitor.lock"
        with MonitorLock(path):
            async def follow() -> str:
                raise AssertionError("followed while another monitor held the lock")

            async def read(busy: MonitorBusy) -> str:
                return str(busy)

            said = await follow_or_read(path, follow, read, wait_s=0)
        assert f"already being followed by pid {os.getpid()}" in said

    async def test_without_a_reader_a_held_lock_is_the_error(self, tmp_path: Path) -> None:
        """The daemon reads nothing: another monitor holding the lock is its one-line error."""
        path = tmp_path / "monitor.lock"

        async def follow() -> None:
            raise AssertionError("followed while another monitor held the lock")

        with MonitorLock(path), pytest.raises(MonitorBusy, match="already being followed"):
            await follow_or_read(path, follow, wait_s=0)

    async def test_the_lock_is_released_when_following_fails(self, tmp_path: Path) -> None:
        """A monitor that stops with an error (read-only history, Ctrl-C) leaves the lock free for the next."""
        path = tmp_path / "monitor.lock"

        async def follow() -> None:
            raise RuntimeError("stopped")

        with pytest.raises(RuntimeError, match="stopped"):
            await follow_or_read(path, follow)
        assert not monitor_holds(path)
        MonitorLock(path).acquire(wait_s=0)

    async def test_a_refresh_holding_the_lock_is_waited_for_up_to_wait_s(self, tmp_path: Path) -> None:
        """A reading command's refresh is no monitor: with ``wait_s=0`` the caller reads instead of waiting."""
        path = tmp_path / "monitor.lock"
        read_by: list[str] = []

        async def follow() -> None:
            raise AssertionError("followed while a refresh held the lock")

        async def read(busy: MonitorBusy) -> None:
            read_by.append(str(busy))

        with MonitorLock(path, role=REFRESH_ROLE):
            await follow_or_read(path, follow, read, wait_s=0)
        assert read_by and f"{REFRESH_ROLE} pid {os.getpid()}" in read_by[0]
