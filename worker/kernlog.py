"""The ``kernlog`` op: the host's kernel-log lines around a run's life that tell of an OOM kill or a GPU Xid.

Asked by the controller when a run ended by SIGKILL (exit 137).  Whatever is readable without root is
tried, in order: ``journalctl -k --since … --until … -o short-iso`` (needs the ``adm`` or
``systemd-journal`` group for kernel messages), ``dmesg --time-format iso`` (refused when
``kernel.dmesg_restrict`` is 1), ``/dev/kmsg`` (the same restriction).  Only lines mentioning
``Out of memory`` / ``oom-kill`` / ``Killed process`` / ``NVRM: Xid`` / ``fallen off the bus`` are kept,
the last ``MAX_LINES`` of them, each capped; the tools run with a time limit.  What the lines mean is the
controller's (``orchestrator/logparse/kernel.py``).  Stdlib only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections import deque
from datetime import datetime
from typing import Any

MAX_LINES = 100
LINE_CHARS = 1000
TOOL_TIMEOUT_S = 15.0
#: Seconds before the run's start and after its end that are read too (the kill is logged just before rc).
MARGIN_S = 30.0
_WANTED = re.compile(r"Out of memory|oom-kill|Killed process|NVRM: Xid|fallen off the bus")
_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?")
_JOURNAL_REFUSED = ("not seeing messages", "insufficient permissions", "No journal files", "Permission denied")


def _stamp(line: str) -> float | None:
    """Epoch seconds of an ISO-8601 timestamp at the start of ``line`` (Python 3.8's fromisoformat takes
    neither ``Z`` nor ``+0000``)."""
    m = _ISO.match(line)
    if m is None:
        return None
    tz = m.group(3) or "+00:00"
    tz = "+00:00" if tz == "Z" else (tz if ":" in tz else tz[:3] + ":" + tz[3:])
    try:
        return datetime.fromisoformat(m.group(1) + "." + (m.group(2) or "0")[:6].ljust(6, "0") + tz).timestamp()
    except ValueError:
        return None


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _run(argv: list[str]) -> tuple[deque[str], int, str]:
    """(wanted lines of stdout, exit status, stderr's start) of a tool, read as a stream, under a time limit."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, "LC_ALL": "C", "SYSTEMD_PAGER": "", "PAGER": "cat"})
    timer = threading.Timer(TOOL_TIMEOUT_S, proc.kill)
    timer.start()
    kept: deque[str] = deque(maxlen=MAX_LINES)
    err = b""
    try:
        assert proc.stdout is not None and proc.stderr is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if _WANTED.search(line):
                kept.append(line[:LINE_CHARS])
        err = proc.stderr.read(4096)
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return kept, rc, err.decode("utf-8", "replace").strip()


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:300]


def from_journalctl(since: float, until: float) -> tuple[list[str] | None, str]:
    argv = ["journalctl", "-k", "--no-pager", "-o", "short-iso",
            "--since", f"@{int(since)}", "--until", f"@{int(until) + 1}"]
    try:
        kept, rc, err = _run(argv)
    except OSError as e:
        return None, f"journalctl: {e.strerror or e}"
    if rc != 0 or any(word in err for word in _JOURNAL_REFUSED):
        return None, "journalctl: " + (_first_line(err) or f"exit status {rc}")
    return list(kept), ""


def from_dmesg(since: float, until: float) -> tuple[list[str] | None, str]:
    try:
        kept, rc, err = _run(["dmesg", "--time-format", "iso"])
    except OSError as e:
        return None, f"dmesg: {e.strerror or e}"
    if rc != 0:
        return None, _first_line(err) or f"dmesg: exit status {rc}"
    return _within(kept, since, until), ""


def from_kmsg(since: float, until: float, path: str = "/dev/kmsg") -> tuple[list[str] | None, str]:
    """``/dev/kmsg`` records (``pri,seq,usec,flags;text``), their boot-relative time made wall-clock time and
    written as dmesg's ISO format."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return None, f"{path}: {e.strerror or e}"
    try:
        with open("/proc/uptime") as f:
            booted = time.time() - float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        booted = None
    kept: deque[str] = deque(maxlen=MAX_LINES)
    deadline = time.monotonic() + TOOL_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # a record overwritten while reading: go on with the next
                continue
            except OSError as e:
                return None, f"{path}: {e.strerror or e}"
            if not record:
                break
            head, _, text = record.decode("utf-8", "replace").partition(";")
            text = text.split("\n", 1)[0]
            if not _WANTED.search(text):
                continue
            fields = head.split(",")
            when = booted + int(fields[2]) / 1e6 if booted is not None and len(fields) > 2 else None
            if when is not None and not since <= when <= until:
                continue
            stamp = "" if when is None else (
                time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f",{int(when % 1 * 1e6):06d}+00:00 ")
            kept.append((stamp + text)[:LINE_CHARS])
    finally:
        os.close(fd)
    return list(kept), ""


def _within(lines: deque[str], since: float, until: float) -> list[str]:
    out = []
    for line in lines:
        t = _stamp(line)
        if t is None or since <= t <= until:
            out.append(line)
    return out


SOURCES = (("journalctl", from_journalctl), ("dmesg", from_dmesg), ("/dev/kmsg", from_kmsg))


def op(run_dir: str, margin_s: float = MARGIN_S) -> dict[str, Any]:
    """Kernel-log lines of interest between the run's start and its end (rc written; now if not yet)."""
    try:
        with open(os.path.join(run_dir, "wrapper.json")) as f:
            info = json.load(f)
    except (OSError, ValueError):
        info = {}
    now = time.time()
    ended = _mtime(os.path.join(run_dir, "rc")) or now
    started = _mtime(os.path.join(run_dir, "wrapper.json")) or _mtime(run_dir) or ended
    since, until = started - margin_s, min(ended + margin_s, now + 1)
    pids = sorted({int(info[k]) for k in ("pid", "pgid") if isinstance(info.get(k), int)})
    unreadable: list[str] = []
    for name, read in SOURCES:
        lines, why = read(since, until)
        if lines is not None:
            return {"source": name, "lines": lines, "unreadable": unreadable, "since": since, "until": until,
                    "ended_at": ended, "pids": pids}
        unreadable.append(why)
    return {"source": None, "lines": [], "unreadable": unreadable, "since": since, "until": until,
            "ended_at": ended, "pids": pids}
