"""Spine figures through a real loopback sshd (issue 2).

1. Latency from a line appended to the remote log to its event committed in SQLite: median and p95 over
   N lines written at random 20–80 ms gaps by a real job, followed by the in-process monitor.
2. Remote cost of following one idle run for D seconds: SSH connections opened and CPU seconds spent by
   every host-side process of those connections (sshd session, shells, tail, agent).

Run: .venv/bin/python bench/follow_bench.py [--lines 200] [--idle 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from sshd import make_sshd

JOB = """
import json, random, sys, time
n = int(sys.argv[1]); out = sys.argv[2]; stamps = []
time.sleep(1.0)
for i in range(1, n + 1):
    time.sleep(random.uniform(0.02, 0.08))
    stamps.append(time.time())
    print(f"Processed {i}/{n} samples", flush=True)
json.dump(stamps, open(out, "w"))
"""

CLK_TCK = os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            out.append(child)
            todo.append(child)
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])  # utime stime cutime cstime
    return total / CLK_TCK


def setup(base: Path):
    sshd = make_sshd(base / "sshd")
    home = base / "home"
    home.mkdir()
    (base / "ssh_config").write_text(sshd.ssh_config())
    (home / "config.toml").write_text(f'[ssh]\nconfig = ["{base / "ssh_config"}"]\n[monitor]\npoll_interval_s = 1.0\n')
    os.environ["EORCH_HOME"] = str(home)
    from orchestrator.context import Context
    from orchestrator.store.models import Host
    from orchestrator.store.queries import utcnow

    ctx = Context.load()
    with ctx.db() as s:
        s.add(Host(name="gpu", destination="testbox", port=None, root=str(base / "root"), python="python3",
                   created_at=utcnow()))
    return sshd, ctx


async def latency(ctx, base: Path, lines: int) -> list[float]:
    from orchestrator.actions.launcher import launch
    from orchestrator.core.launchrequest import LaunchRequest
    from orchestrator.core.notices import RunProgressed
    from orchestrator.monitoring.monitor import Monitor

    stamps_file = base / "stamps.json"
    run = await launch(ctx, "gpu", LaunchRequest.command([sys.executable, "-c", JOB, str(lines), str(stamps_file)],
                                                         name="latency"))
    committed: dict[int, float] = {}

    def listener(notice) -> None:
        if isinstance(notice, RunProgressed) and notice.run_id == run.id:
            now = time.time()
            for event in notice.events:
                if event.get("kind") == "progress_reported":
                    committed.setdefault(event["done"], now)

    await Monitor(ctx, run_refs=[run.id], listeners=[listener], poll_interval=0.5).run(until_done=True)
    stamps = json.loads(stamps_file.read_text())
    return [(committed[i + 1] - t) * 1000 for i, t in enumerate(stamps) if i + 1 in committed]


async def idle_cost(ctx, sshd, seconds: float) -> dict[str, float]:
    from orchestrator.actions.launcher import launch
    from orchestrator.core.launchrequest import LaunchRequest
    from orchestrator.monitoring.monitor import Monitor

    run = await launch(ctx, "gpu", LaunchRequest.command(["sleep", str(seconds + 30)], name="idle"))
    await ctx.close()
    log_before = (sshd.dir / "sshd.log").read_text().count("Accepted publickey")
    monitor = Monitor(ctx, run_refs=[run.id], poll_interval=1.0)
    task = asyncio.create_task(monitor.run(until_done=True))
    await asyncio.sleep(2)  # connected and following
    pids = descendants(sshd.proc.pid)
    cpu_start = cpu_seconds(pids)
    await asyncio.sleep(seconds)
    pids_end = descendants(sshd.proc.pid)
    cpu_end = cpu_seconds(pids_end)
    connections = (sshd.dir / "sshd.log").read_text().count("Accepted publickey") - log_before
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    from orchestrator.actions.cancel import cancel_run

    await cancel_run(ctx, run.id, 1)
    return {"seconds": seconds, "ssh_connections_opened": connections,
            "host_cpu_seconds": round(cpu_end - cpu_start, 3), "host_processes": len(pids_end)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--idle", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sshd, ctx = setup(base)
        try:
            lat = asyncio.run(latency(ctx, base, args.lines))
            lat.sort()
            print(f"line → SQLite event latency over {len(lat)} lines: median {statistics.median(lat):.1f} ms, "
                  f"p95 {lat[int(0.95 * (len(lat) - 1))]:.1f} ms, max {lat[-1]:.1f} ms")
            cost = asyncio.run(idle_cost(ctx, sshd, args.idle))
            print(f"following one idle run for {cost['seconds']:.0f} s: {cost['ssh_connections_opened']} SSH "
                  f"connection(s) opened, {cost['host_cpu_seconds']} CPU s on the host "
                  f"({cost['host_processes']} host-side processes)")
        finally:
            sshd.stop()


if __name__ == "__main__":
    main()
