"""Deterministic history for the TUI tests: fixed timestamps, a fixed clock, a real log file on `local`."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from orchestrator.context import Context
from orchestrator.store.models import Alert, Event, Host, Run

NOW = datetime(2025, 1, 10, 12, 0, 0)

TRACEBACK = """Traceback (most recent call last):
  File "/opt/vllm/vllm/v1/engine/core.py", line 512, in run_engine_core
    engine_core = EngineCoreProc(*args, **kwargs)
  File "/opt/vllm/vllm/v1/worker/gpu_worker.py", line 201, in determine_available_memory
    self.model_runner.profile_run()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"""

OOM_CAUSE: dict[str, Any] = {
    "exception": "torch.OutOfMemoryError",
    "message": "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB",
    "process": "EngineCore_DP0 pid=4242",
    "signature": "cuda-oom",
    "traceback": TRACEBACK,
    "line_no": 9,
}

FAILED_LOG = (
    "INFO 01-10 10:00:03 [api_server.py:1090] vLLM API server version 0.11.0\n"
    "\x1b[1;36m(EngineCore_DP0 pid=4242)\x1b[0;0m INFO 01-10 10:00:09 [core.py:71] Initializing a V1 LLM engine\n"
    "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]\r"
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [18:02<00:00, 270.5s/it]\n"
    "INFO 01-10 10:19:05 [gpu_model_runner.py:1234] Model loading took 14.99 GiB and 1082.1 seconds\n"
    "WARNING 01-10 10:19:06 [config.py:77] [markup] is not markup: [bold]literal[/bold]\n"
    "ERROR 01-10 10:19:40 [core.py:700] EngineCore failed to start.\n"
    + TRACEBACK + "\n"
    "ERROR 01-10 10:19:41 [multiproc_executor.py:140] Worker proc VllmWorker-0 died unexpectedly\n"
    "RuntimeError: Engine core initialization failed. See root cause above.\n"
)


def _run(**kw: Any) -> Run:
    defaults: dict[str, Any] = {"kind": "command", "env": {}, "cwd": None, "cancel_requested": False,
                                "log_offset": 0, "events_offset": 0, "phase": "starting"}
    return Run(**{**defaults, **kw})


def seed(ctx: Context, local_root: Path) -> dict[str, str]:
    """Five runs on two hosts; returns {label: run id}."""
    failed_dir = local_root / "runs" / "bb22cc33"
    failed_dir.mkdir(parents=True)
    (failed_dir / "log").write_bytes(FAILED_LOG.encode())
    with ctx.db() as s:
        s.add(Host(name="gpu", destination="gpu-box.lab", port=None, root="~/.eorch", python="python3",
                   created_at=NOW - timedelta(days=3), reachable=True,
                   facts={"hostname": "gpu-box", "os": "Linux 6.8", "python": "3.11.9", "root": "/home/u/.eorch",
                          "disk_free_bytes": 512 * 2**30, "disk_total_bytes": 2048 * 2**30,
                          "gpus": [{"index": 0, "name": "NVIDIA H200", "memory_used_mib": 1024,
                                    "memory_total_mib": 143771},
                                   {"index": 1, "name": "NVIDIA H200", "memory_used_mib": 80000,
                                    "memory_total_mib": 143771}]}))
        s.flush()
        s.add_all([
            _run(id="aa11bb22", name="eagle3-llama-8b", host="gpu", kind="eagle3-extract",
                 command=["python3", "-m", "worker.recipes.eagle3", "spec.json"], status="running", phase="loading",
                 created_at=NOW - timedelta(minutes=20), started_at=NOW - timedelta(minutes=20),
                 remote_dir=None, shards_done=12, shards_total=35, shards_rate=1 / 30, shards_eta_s=690.0,
                 env_fingerprint={"python": "3.11.9", "vllm": "0.11.0", "torch": "2.8.0"}),
            _run(id="bb22cc33", name="serve-llama-70b", host="local",
                 command=["vllm", "serve", "meta-llama/Llama-3.1-70B", "--tensor-parallel-size", "2"],
                 status="failed", phase="failed", exit_code=1, created_at=NOW - timedelta(hours=2),
                 started_at=NOW - timedelta(hours=2), ended_at=NOW - timedelta(hours=2) + timedelta(minutes=20),
                 remote_dir=str(failed_dir), log_offset=len(FAILED_LOG.encode()), root_cause=OOM_CAUSE,
                 signature="cuda-oom", exception="torch.OutOfMemoryError", fingerprint="fp-oom",
                 shards_done=4, shards_total=4),
            _run(id="cc33dd44", name="train resnet", host="local", command=["python", "train.py"],
                 status="succeeded", phase="stopped", exit_code=0, created_at=NOW - timedelta(hours=5),
                 started_at=NOW - timedelta(hours=5), ended_at=NOW - timedelta(hours=4),
                 progress_done=100, progress_total=100, progress_rate=0.03),
            _run(id="dd44ee55", name="hs-extract-qwen", host="gpu", command=["bash", "extract.sh"],
                 status="cancelled", phase="running", exit_code=-15, created_at=NOW - timedelta(days=1),
                 started_at=NOW - timedelta(days=1), ended_at=NOW - timedelta(hours=23)),
            _run(id="ee55ff66", name="serve-llama-70b", host="gpu", command=["vllm", "serve", "x"],
                 status="failed", phase="failed", exit_code=1, created_at=NOW - timedelta(days=2),
                 started_at=NOW - timedelta(days=2), ended_at=NOW - timedelta(days=2) + timedelta(minutes=19),
                 root_cause=OOM_CAUSE, signature="cuda-oom", exception="torch.OutOfMemoryError",
                 fingerprint="fp-oom"),
        ])
        s.flush()
        t0 = NOW - timedelta(hours=2)
        for minutes, kind, data in [
            (0, "status", {"from": "pending", "to": "running"}),
            (1, "phase_changed", {"phase": "loading", "line_no": 3}),
            (19, "phase_changed", {"phase": "loaded", "line_no": 5}),
            (20, "phase_changed", {"phase": "failed", "line_no": 9}),
            (20, "status", {"from": "running", "to": "failed", "exit_code": 1}),
        ]:
            s.add(Event(run_id="bb22cc33", ts=t0 + timedelta(minutes=minutes), kind=kind, data=data))
        t1 = NOW - timedelta(minutes=20)
        s.add(Event(run_id="aa11bb22", ts=t1, kind="status", data={"from": "pending", "to": "running"}))
        s.add(Event(run_id="aa11bb22", ts=t1 + timedelta(minutes=2), kind="phase_changed", data={"phase": "loading"}))
        s.add(Alert(dedup_key="bb22cc33:failed", kind="failed", run_id="bb22cc33", host="local",
                    created_at=t0 + timedelta(minutes=20), title="run bb22cc33 failed",
                    body="serve-llama-70b: torch.OutOfMemoryError"))
    return {"running": "aa11bb22", "failed": "bb22cc33", "succeeded": "cc33dd44", "cancelled": "dd44ee55",
            "earlier": "ee55ff66"}


def seed_slurm(ctx: Context) -> dict[str, str]:
    """A Slurm host and two runs on it: one pending for resources, one running on a node."""
    with ctx.db() as s:
        s.add(Host(name="hpc", destination="login.hpc", port=None, root="~/.eorch", python="python3",
                   created_at=NOW - timedelta(days=1), scheduler="slurm", sbatch_args=["--gres=gpu:8"]))
        s.flush()
        s.add_all([
            _run(id="ff66aa77", name="sweep-queued", host="hpc", command=["python", "sweep.py"],
                 status="launching", created_at=NOW - timedelta(minutes=5), remote_dir=None,
                 scheduler_job_id="48213", scheduler_state={"state": "PENDING", "reason": "Resources", "node": None}),
            _run(id="aa77bb88", name="sweep-running", host="hpc", command=["python", "sweep.py", "--lr", "1e-4"],
                 status="running", phase="loading", created_at=NOW - timedelta(minutes=3),
                 started_at=NOW - timedelta(minutes=2), remote_dir=None, scheduler_job_id="48214",
                 scheduler_state={"state": "RUNNING", "reason": None, "node": "gpu-node07"}),
        ])
    return {"pending": "ff66aa77", "running": "aa77bb88"}
