"""What the host's kernel log says about a run that was killed (SIGKILL, exit 137): pure, text in.

A log that simply stops, with the process ended by SIGKILL, says nothing itself; the kernel may: its OOM
killer logs ``Out of memory: Killed process 1234 (python3) total-vm:… anon-rss:…`` (``Memory cgroup out of
memory: …`` for a container's limit), and NVIDIA's driver logs ``NVRM: Xid (PCI:…): 79, …`` for a GPU that
fell off the bus.  The host's agent (``worker/kernlog.py``) returns the kernel-log lines of the run's
lifetime that mention these, as ``journalctl -k -o short-iso`` or ``dmesg --time-format iso`` print them;
``killed_cause`` turns its report into the run's root cause, and says honestly when the kernel log could
not be read or held nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from orchestrator.logparse.events import RootCause
from orchestrator.logparse.inert import inert_line

#: The root cause an exit status of SIGKILL names by itself (``exits.py``).
KILLED = "killed (SIGKILL; OOM killer?)"
#: An OOM kill this close to the run's end (seconds, either side) is the one that ended it.
NEAR_END_S = 15.0
_TEXT_CAP = 300

# journalctl -o short-iso: "2026-12-01T12:00:01+0000 host kernel: …"; dmesg --time-format iso:
# "2026-12-01T12:00:01,123456+00:00 …"; a leading "[ 7097.005193] " (printk time) may follow either.
_STAMP_RE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d)?\s+"
    r"(?:(?P<host>[\w.\-]+) kernel: )?(?:\[\s*\d+\.\d+\] )?"
)
_KILLED_RE = re.compile(
    r"(?P<cgroup>Memory cgroup out of memory: )?(?:Out of memory: )?Killed process (?P<pid>\d+) "
    r"\((?P<name>[^)]*(?:\)[^)\s,]*)?)\)(?P<rest>.*)$"
)
_RSS_RE = re.compile(r"(?P<key>total-vm|anon-rss|file-rss|shmem-rss):(?P<val>[\d,]+kB)")
_XID_RE = re.compile(r"NVRM: Xid \((?P<dev>PCI:[0-9a-fA-F:.]+)\): (?P<xid>\d+), ?(?P<rest>.*)$")
_OFF_BUS_RE = re.compile(r"NVRM: .*fallen off the bus")
_PID_RE = re.compile(r"\bpid=(?P<pid>\d+)")

#: Xid -> what it means (NVIDIA's Xid catalogue, the ones a training or serving job meets).
XID_MEANINGS: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    32: "invalid or corrupted push buffer stream",
    43: "GPU stopped processing",
    45: "preemptive cleanup, due to previous errors",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapping failure",
    74: "NVLink error",
    79: "fell off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
    154: "GPU recovery action changed",
}


@dataclass(frozen=True)
class KernelEntry:
    """One kernel-log line that tells of a kill or a GPU fault."""

    kind: str  # "oom" or "xid"
    at: datetime | None  # when the kernel logged it (None: no timestamp on the line)
    pid: int | None  # the process killed (oom) or named (xid)
    summary: str  # "Killed process 1234 (python3) total-vm:…kB, anon-rss:…kB" / "GPU Xid 79 (fell off the bus)"
    cgroup: bool = False  # the OOM kill was a memory cgroup's (a container's limit), not the host's
    xid: int | None = None


def _stamp(m: re.Match[str]) -> datetime | None:
    """The time at the start of a ``short-iso`` / ``dmesg --time-format iso`` line (aware, UTC if unzoned)."""
    tz = m.group("tz") or "+00:00"
    tz = "+00:00" if tz == "Z" else (tz if ":" in tz else f"{tz[:3]}:{tz[3:]}")
    frac = (m.group("frac") or "0")[:6].ljust(6, "0")
    try:
        return datetime.fromisoformat(f"{m.group('ts')}.{frac}{tz}")
    except ValueError:
        return None


def read_entries(lines: list[str] | tuple[str, ...]) -> list[KernelEntry]:
    """The OOM kills and Xid errors in kernel-log ``lines``, in order."""
    out: list[KernelEntry] = []
    cgroup_chose = False  # kernels before 5.x: "Memory cgroup out of memory: Kill process …", then "Killed process"
    for raw in lines:
        line = inert_line(str(raw)).strip()
        m = _STAMP_RE.match(line)
        at = _stamp(m) if m is not None else None
        text = line[m.end():] if m is not None else line
        if (k := _KILLED_RE.search(text)) is not None:
            sizes = ", ".join(f"{r.group('key')}:{r.group('val')}" for r in _RSS_RE.finditer(k.group("rest")))
            summary = f"Killed process {k.group('pid')} ({k.group('name')})" + (f" {sizes}" if sizes else "")
            cgroup = bool(k.group("cgroup")) or cgroup_chose
            out.append(KernelEntry("oom", at, int(k.group("pid")), summary, cgroup=cgroup))
            cgroup_chose = False
        elif "Memory cgroup out of memory: Kill process" in text:
            cgroup_chose = True
        elif (x := _XID_RE.search(text)) is not None:
            xid = int(x.group("xid"))
            p = _PID_RE.search(x.group("rest"))
            out.append(KernelEntry("xid", at, int(p.group("pid")) if p else None, _xid_summary(xid, x.group("dev")),
                                   xid=xid))
        elif _OFF_BUS_RE.search(text) is not None:  # newer drivers: the words without an "Xid" line
            out.append(KernelEntry("xid", at, None, _xid_summary(79, None), xid=79))
    return out


def _xid_summary(xid: int, device: str | None) -> str:
    meaning = XID_MEANINGS.get(xid)
    return f"GPU Xid {xid}" + (f" ({meaning})" if meaning else "") + (f" on {device}" if device else "")


def _when(at: datetime | None) -> str:
    return "" if at is None else f" at {at.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC"


def _cause(message: str, signature: str, line_no: int) -> RootCause:
    return RootCause(None, inert_line(message)[:600], None, None, signature, line_no)


def killed_cause(report: dict[str, Any] | None, line_no: int = 0) -> RootCause:
    """The root cause of a run ended by SIGKILL, from the agent's ``kernlog`` report (None: not asked).

    An OOM kill of one of the run's pids, or one within ``NEAR_END_S`` of the run's end, is the cause; else
    the first Xid of the window that is not a consequence of an earlier one (45).  Nothing found, or a kernel
    log that could not be read, keeps "killed (SIGKILL; OOM killer?)" and says which.
    """
    if not report:
        return _cause(KILLED, "killed", line_no)
    source = report.get("source")
    if not source:
        why = "; ".join(str(x) for x in report.get("unreadable") or ()) or "no source"
        return _cause(f"{KILLED} — kernel log not readable: {why[:_TEXT_CAP]}", "killed", line_no)
    entries = read_entries([str(x) for x in report.get("lines") or ()])
    pids = {int(p) for p in report.get("pids") or () if p is not None}
    ended = _epoch(report.get("ended_at"))
    ooms = [e for e in entries if e.kind == "oom"]
    ours = [e for e in ooms if e.pid in pids] or [
        e for e in ooms if ended is not None and e.at is not None and abs(e.at.timestamp() - ended) <= NEAR_END_S]
    xids = [e for e in entries if e.kind == "xid"]
    xid = next((e for e in xids if e.xid != 45), xids[0] if xids else None)
    if ours:
        kill = ours[-1]
        where = "a memory cgroup's OOM killer (its memory limit)" if kill.cgroup else "the kernel's OOM killer"
        also = f"; also {xid.summary}{_when(xid.at)}" if xid is not None else ""
        return _cause(f"killed by {where} ({kill.summary}){_when(kill.at)}{also}", "oom_killed", line_no)
    if xid is not None:
        return _cause(f"killed (SIGKILL) — {xid.summary}{_when(xid.at)}", "gpu_xid", line_no)
    if ooms:  # an OOM kill in the window, but of another process, well before the end
        kill = ooms[-1]
        return _cause(f"{KILLED} — the kernel's OOM killer ran during the run ({kill.summary}){_when(kill.at)}, "
                      f"not at its end", "killed", line_no)
    return _cause(f"{KILLED} — no OOM-killer or GPU Xid entry in the kernel log ({source}) around its end",
                  "killed", line_no)


def _epoch(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None
