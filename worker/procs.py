"""Process facts from /proc: start times (against PID reuse), boot id, run markers, descendants."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str:
    try:
        with open(BOOT_ID_PATH) as f:
            return f.read().strip()
    except OSError:
        return ""


def stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm may contain spaces and parens: fields start after the last ')'.
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest


def start_time(pid: int) -> int | None:
    """Process start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def is_zombie(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and bool(fields) and fields[0] in ("Z", "X")


def is_same_process(pid: int, recorded_start: int | None) -> bool:
    """True if PID is alive, not a zombie, and is the process that started at recorded_start."""
    current = start_time(pid)
    if current is None or is_zombie(pid):
        return False
    return recorded_start is None or current == recorded_start


def all_pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def group_alive(pgid: int) -> bool:
    """Whether any live process is in process group ``pgid``."""
    for pid in all_pids():
        fields = stat_fields(pid)
        if fields and len(fields) > 3 and fields[0] not in ("Z", "X") and int(fields[3]) == pgid:
            return True
    return False


def pids_with_marker(key: str, value: str) -> list[int]:
    """Live processes whose environment holds KEY=VALUE (same user only; others are unreadable)."""
    needle = f"{key}={value}".encode()
    found = []
    me = os.getpid()
    for pid in all_pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env and not is_zombie(pid):
            found.append(pid)
    return found


def signal_pids(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
