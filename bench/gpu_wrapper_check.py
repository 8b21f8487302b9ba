"""The remote side on a real GPU box: wrapper, liveness and cancel with GPU memory held by a process tree.

Runs only worker/ (stdlib) plus torch for the job itself, so it needs no eorch install on the GPU host:
    python3 bench/gpu_wrapper_check.py OUT_DIR
A job allocates GPU memory in its main process and in a grandchild that escaped with setsid, then prints
shard-loading lines; the check cancels it and measures how long until nvidia-smi shows the memory free.
Also: exit code 7 is recorded, and a SIGKILLed job (no rc) reads as gone-without-rc (lost).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from worker import ops
from worker.protocol import LaunchSpec

JOB = r"""
import os, subprocess, sys, time, torch
child = subprocess.Popen([sys.executable, "-c",
    "import torch, time; x = torch.empty(10 * 2**30, dtype=torch.uint8, device='cuda'); print('child holds 10 GiB', flush=True); time.sleep(600)"],
    start_new_session=True)
x = torch.empty(20 * 2**30, dtype=torch.uint8, device="cuda")
print("main holds 20 GiB", flush=True)
for i in range(65):
    print(f"Loading safetensors checkpoint shards: {i * 100 // 64:3d}% Completed | {i}/64 [00:01<00:01, 30.0it/s]", flush=True)
    time.sleep(0.02)
time.sleep(600)
"""


def gpu_used_mib() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(x) for x in out.split())


def wait(pred, timeout: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if pred():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp())
    result: dict[str, object] = {"baseline_mib": gpu_used_mib()}

    run_dir = str(root / "gpu-run")
    info = ops.launch(LaunchSpec(run_dir, "gpu-run", [sys.executable, "-c", JOB])).to_json()
    result["launched"] = {k: info[k] for k in ("pid", "pgid", "subreaper")}
    held = wait(lambda: gpu_used_mib() - int(result["baseline_mib"]) > 29_000, 120)  # type: ignore[call-overload]
    result["seconds_to_hold_30gib"] = held
    result["held_mib"] = gpu_used_mib()
    result["status_while_running"] = ops.status(run_dir)
    t0 = time.monotonic()
    result["cancel"] = ops.cancel(run_dir, "gpu-run", grace_s=10)
    result["cancel_seconds"] = round(time.monotonic() - t0, 3)
    freed = wait(lambda: gpu_used_mib() - int(result["baseline_mib"]) < 1000, 60)  # type: ignore[call-overload]
    result["seconds_from_cancel_return_to_memory_free"] = freed
    result["status_after_cancel"] = ops.status(run_dir)
    result["log_tail"] = Path(run_dir, "log").read_text().splitlines()[-3:]

    rc_dir = str(root / "rc7")
    ops.launch(LaunchSpec(rc_dir, "rc7", [sys.executable, "-c", "raise SystemExit(7)"])).to_json()
    wait(lambda: ops.status(rc_dir)["rc"] is not None, 30)
    result["exit_7"] = ops.status(rc_dir)

    lost_dir = str(root / "lost")
    lost = ops.launch(LaunchSpec(lost_dir, "lost", ["sleep", "300"])).to_json()
    os.killpg(lost["pgid"], signal.SIGKILL)
    wait(lambda: not ops.status(lost_dir)["alive"], 10)
    result["sigkilled"] = ops.status(lost_dir)

    (out / "gpu_wrapper.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    ok = (result["cancel"]["remaining"] == [] and freed is not None  # type: ignore[index]
          and result["exit_7"]["rc"] == 7 and result["sigkilled"]["rc"] is None  # type: ignore[index]
          and not result["sigkilled"]["alive"])  # type: ignore[index]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "out"))
