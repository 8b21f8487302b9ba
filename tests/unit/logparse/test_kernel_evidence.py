"""``logparse.kernel``: real OOM-killer and NVIDIA Xid lines (tests/data/kernel/) turned into a killed run's
root cause, and the honest words when the kernel log holds nothing or cannot be read."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.logparse import load_catalogue, signature_hint
from orchestrator.logparse.kernel import KILLED, killed_cause, read_entries

KERNEL = Path(__file__).resolve().parents[2] / "data" / "kernel"


def _lines(name: str) -> list[str]:
    return (KERNEL / name).read_text().splitlines()


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _report(name: str, ended_at: float | None, pids: list[int] | None = None, source: str = "journalctl") -> dict[str, Any]:
    return {"source": source, "lines": _lines(name), "unreadable": [], "ended_at": ended_at, "pids": pids or []}


def test_stamps_of_both_tools() -> None:
    def at(stamp: str) -> datetime | None:
        return read_entries([f"{stamp} host kernel: Out of memory: Killed process 7 (python3)"])[0].at

    assert at("2025-05-15T23:09:30+0000") == datetime(2025, 5, 15, 23, 9, 30, tzinfo=UTC)
    assert at("2025-03-30T08:24:00,412311+00:00") == datetime(2025, 3, 30, 8, 24, 0, 412311, tzinfo=UTC)
    assert at("[ 518.050606]") is None


def test_global_oom_kill_of_the_runs_pid() -> None:
    """journalctl short-iso, several victims: the one whose pid is the run's is named, with its sizes."""
    cause = killed_cause(_report("oom_journalctl_short_iso.txt", None, pids=[15783]))
    assert cause.message == ("killed by the kernel's OOM killer (Killed process 15783 (python3) total-vm:11964kB, "
                             "anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB) at 2025-05-15 23:09:31 UTC")
    assert cause.signature == "oom_killed"
    assert "RAM" in (signature_hint("oom_killed") or "")


def test_oom_kill_at_the_runs_end_without_a_known_pid() -> None:
    """dmesg iso: the kill 3 s before the run's rc was written is the run's; the pages table is not a kill."""
    entries = read_entries(_lines("oom_dmesg_iso.txt"))
    assert [(e.kind, e.pid) for e in entries] == [("oom", 7899)]
    cause = killed_cause(_report("oom_dmesg_iso.txt", _epoch("2025-03-30T08:24:03+00:00"), source="dmesg"))
    assert cause.message.startswith("killed by the kernel's OOM killer (Killed process 7899 (python) "
                                    "total-vm:26184840kB, anon-rss:15370088kB")
    assert cause.message.endswith("at 2025-03-30 08:24:00 UTC")


def test_an_earlier_oom_kill_of_another_process_is_not_the_cause() -> None:
    cause = killed_cause(_report("oom_dmesg_iso.txt", _epoch("2025-03-30T09:00:00+00:00"), source="dmesg"))
    assert cause.signature == "killed"
    assert cause.message.startswith(KILLED + " — the kernel's OOM killer ran during the run (Killed process 7899")
    assert cause.message.endswith("not at its end")


def test_memory_cgroup_limit() -> None:
    cause = killed_cause(_report("cgroup_oom_dmesg_iso.txt", None, pids=[140339], source="dmesg"))
    assert cause.message.startswith("killed by a memory cgroup's OOM killer (its memory limit) (Killed process "
                                    "140339 (python3)")
    old = killed_cause(_report("cgroup_oom_old_kernel.txt", _epoch("2017-12-07T00:05:16+00:00")))
    assert old.message.startswith("killed by a memory cgroup's OOM killer (its memory limit) (Killed process "
                                  "28438 (java) total-vm:20255636kB, anon-rss:466160kB, file-rss:13684kB)")


def test_gpu_fell_off_the_bus() -> None:
    cause = killed_cause(_report("xid79_journalctl.txt", _epoch("2026-02-14T05:04:10+00:00")))
    assert cause.message == "killed (SIGKILL) — GPU Xid 79 (fell off the bus) on PCI:0000:44:00 at 2026-02-14 05:03:58 UTC"
    assert cause.signature == "gpu_xid"
    assert [s.id for s in load_catalogue().match(cause.message)][-1] == "gpu_xid"


def test_first_xid_that_is_not_a_consequence() -> None:
    """Xid 31 (page fault), then 62 and 45s "caused by previous Xid": the 31 is named, with the process pid."""
    entries = read_entries(_lines("xid31_chain_dmesg_iso.txt"))
    assert [e.xid for e in entries] == [31, 62, 45, 45]
    assert entries[0].pid == 13332
    cause = killed_cause(_report("xid31_chain_dmesg_iso.txt", None, source="dmesg"))
    assert cause.message.startswith("killed (SIGKILL) — GPU Xid 31 (GPU memory page fault) on PCI:0000:0a:00 at 2024-04-07 14:03:12")


def test_oom_kill_and_xid_both_named() -> None:
    report = _report("oom_dmesg_iso.txt", None, pids=[7899], source="dmesg")
    report["lines"] += _lines("xid79_journalctl.txt")
    cause = killed_cause(report)
    assert cause.message.startswith("killed by the kernel's OOM killer (Killed process 7899 (python)")
    assert "; also GPU Xid 79 (fell off the bus)" in cause.message


def test_nothing_found_and_not_readable_say_so() -> None:
    empty = killed_cause({"source": "dmesg", "lines": [], "unreadable": ["journalctl: No journal files were found."],
                          "ended_at": 0, "pids": []})
    assert empty.message == f"{KILLED} — no OOM-killer or GPU Xid entry in the kernel log (dmesg) around its end"
    refused = killed_cause({"source": None, "lines": [], "pids": [], "unreadable": [
        "journalctl: No journal files were found.", "dmesg: read kernel buffer failed: Operation not permitted",
        "/dev/kmsg: Operation not permitted"]})
    assert refused.message == (f"{KILLED} — kernel log not readable: journalctl: No journal files were found.; "
                               "dmesg: read kernel buffer failed: Operation not permitted; /dev/kmsg: Operation not "
                               "permitted")
    assert refused.signature == "killed"
    assert killed_cause(None).message == KILLED


def test_kernel_text_is_made_inert() -> None:
    """A process name is the job's to choose: escape sequences in it never reach a terminal."""
    cause = killed_cause({"source": "dmesg", "pids": [5], "unreadable": [], "lines": [
        "2025-03-30T08:24:00,412311+00:00 Out of memory: Killed process 5 (evil\x1b]2;pwn\x07) total-vm:1kB"]})
    assert "\x1b" not in cause.message and "\x07" not in cause.message
