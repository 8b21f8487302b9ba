"""The worker's ``kernlog`` op on this machine: its sources tried in order, the run's window, bounded output.

``journalctl`` / ``dmesg`` are fakes on PATH (a kernel log cannot be made to hold an OOM kill); the run
directory, the processes and the op are real."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from worker import kernlog


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "runs" / "r1"
    d.mkdir(parents=True)
    (d / "wrapper.json").write_text('{"pid": 4321, "pgid": 4321}')
    (d / "rc").write_text("137\n")
    now = time.time()
    os.utime(d / "wrapper.json", (now - 600, now - 600))
    os.utime(d / "rc", (now - 60, now - 60))
    return d


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    return d


def _iso(t: float, journal: bool) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ("+0000" if journal else ",000000+00:00")


def test_journalctl_lines_of_interest_only(run_dir: Path, bin_dir: Path) -> None:
    ended = os.stat(run_dir / "rc").st_mtime
    lines = [f"{_iso(ended, True)} h kernel: usb 1-1: new high-speed USB device"] * 500 + [
        f"{_iso(ended, True)} h kernel: Out of memory: Killed process {i} (python3) total-vm:1kB" for i in range(150)]
    (bin_dir / "out.txt").write_text("\n".join(lines) + "\n")
    _tool(bin_dir, "journalctl", f'echo "$*" > {bin_dir}/args; cat {bin_dir}/out.txt\n')
    report = kernlog.op(str(run_dir))
    assert report["source"] == "journalctl" and report["unreadable"] == []
    assert len(report["lines"]) == kernlog.MAX_LINES and report["lines"][-1].endswith("Killed process 149 (python3) total-vm:1kB")
    assert report["pids"] == [4321] and report["ended_at"] == pytest.approx(ended)
    args = (bin_dir / "args").read_text().split()
    assert int(args[args.index("--since") + 1][1:]) == int(os.stat(run_dir / "wrapper.json").st_mtime - kernlog.MARGIN_S)
    assert int(args[args.index("--until") + 1][1:]) == int(ended + kernlog.MARGIN_S) + 1


def test_refused_journal_falls_back_to_dmesg_in_the_window(run_dir: Path, bin_dir: Path) -> None:
    ended = os.stat(run_dir / "rc").st_mtime
    _tool(bin_dir, "journalctl", 'echo "Hint: You are currently not seeing messages from other users and the system." >&2\n'
                                 'echo "-- No entries --"\n')
    _tool(bin_dir, "dmesg", f'echo "{_iso(ended - 86400, False)} NVRM: Xid (PCI:0000:0a:00): 31, pid=1, old"\n'
                            f'echo "{_iso(ended - 1, False)} NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus."\n')
    report = kernlog.op(str(run_dir))
    assert report["source"] == "dmesg"
    assert report["unreadable"] == ["journalctl: Hint: You are currently not seeing messages from other users and the system."]
    assert [ln.split(" ", 1)[1] for ln in report["lines"]] == ["NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus."]


def test_nothing_readable_says_why_for_each_source(run_dir: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    _tool(bin_dir, "journalctl", 'echo "No journal files were found." >&2; exit 1\n')
    _tool(bin_dir, "dmesg", 'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2; exit 1\n')
    missing = str(tmp_path / "no-kmsg")
    monkeypatch.setattr(kernlog, "SOURCES", (*kernlog.SOURCES[:2], ("/dev/kmsg", lambda s, u: kernlog.from_kmsg(s, u, missing))))
    report = kernlog.op(str(run_dir))
    assert report["source"] is None and report["lines"] == []
    assert report["unreadable"] == ["journalctl: No journal files were found.",
                                    "dmesg: read kernel buffer failed: Operation not permitted",
                                    f"{missing}: No such file or directory"]
