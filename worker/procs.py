"""Process facts from /proc: start times (against PID reuse), boot id, run markers, descendants."""

from __future__ import annotations

import os
import signal
import time
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


PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread (no argv, no environment, ever)
EXEC_SETTLE_S = 0.5  # how long a fresh process may take to show its new argv and environment
YOUNG_S = 5.0


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _age_s(fields: list[str]) -> float:
    try:
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")


def environ_and_argv(pid: int) -> tuple[list[bytes], list[bytes]] | None:
    """PID's environment and argv, or None when it is gone, unreadable, a zombie or a kernel thread.

    A process in the middle of execve() shows an empty environ, cmdline or both for a moment, after its
    parent's ``Popen`` has returned (close-on-exec fires before the kernel lays out the new argv and
    environment): of 300 children read the moment ``Popen`` returned, 131 showed one of the two empty. A young
    process is read again until both are there (or for at most EXEC_SETTLE_S: an empty environment is
    allowed), so a marked child that was just started is not missed."""
    deadline = time.monotonic() + EXEC_SETTLE_S
    while True:
        try:
            env, argv = _read(f"/proc/{pid}/environ"), _read(f"/proc/{pid}/cmdline")
        except OSError:
            return None
        if env and argv:  # the common case: no stat read
            return env.split(b"\0"), argv.split(b"\0")
        fields = stat_fields(pid)
        if not fields or len(fields) < 20 or fields[0] in ("Z", "X") or int(fields[6]) & PF_KTHREAD:
            return None
        if time.monotonic() > deadline or _age_s(fields) > YOUNG_S:
            return env.split(b"\0"), argv.split(b"\0")
        time.sleep(0.002)


def pids_with_marker(key: str, value: str) -> list[int]:
    """Live processes whose environment holds KEY=VALUE (same user only; others are unreadable)."""
    needle = f"{key}={value}".encode()
    found = []
    me = os.getpid()
    for pid in all_pids():
        if pid == me:
            continue
        seen = environ_and_argv(pid)
        if seen and needle in seen[0] and not is_zombie(pid):
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
