"""The recipe's stop step (issue 6, step 5) on a real GPU box: every process of the run gone, GPU memory released.

Needs only worker/ (stdlib) and torch, so it runs on a GPU host without vLLM:
    python3 bench/gpu_recipe_stop_check.py OUT_DIR
Stands in for the two processes the recipe starts: a "server" that holds 20 GiB, takes a second to shut down
on SIGTERM and left a setsid'd grandchild holding 10 GiB that ignores SIGTERM (a stuck worker), and the warm
speculators python busy in an order that holds 5 GiB.  Then runs ``Eagle3Recipe.stop()`` itself and records
what it reports (stopped, leftover_killed, remaining, gpu_released) next to nvidia-smi's own view.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.gpu_wrapper_check import gpu_used_mib as used_mib
from bench.gpu_wrapper_check import wait
from worker.events import EventWriter
from worker.recipes import eagle3_plan as plan
from worker.recipes.eagle3 import Eagle3Recipe
from worker.recipes.proc import Child, gpu_pids, pids_with_marker
from worker.recipes.warm import WarmPython

SERVER = r"""
import signal, subprocess, sys, time, torch
stuck = subprocess.Popen([sys.executable, "-c",
    "import signal, time, torch; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "x = torch.empty(10 * 2**30, dtype=torch.uint8, device='cuda'); print('worker holds 10 GiB', flush=True); "
    "time.sleep(600)"], start_new_session=True)
x = torch.empty(20 * 2**30, dtype=torch.uint8, device="cuda")
def term(*_):
    print("server: SIGTERM, shutting down", flush=True)
    time.sleep(1.0)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("server holds 20 GiB", flush=True)
time.sleep(600)
"""

CLIENT_ORDER = "import time, torch\nx = torch.empty(5 * 2**30, dtype=torch.uint8, device='cuda')\n" \
               "print('client holds 5 GiB', flush=True)\ntime.sleep(600)\n"


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp())
    (root / "gpu_hold.py").write_text(CLIENT_ORDER)
    marker = "gpu-stop-check"
    os.environ["EORCH_RUN_ID"] = marker
    recipe = Eagle3Recipe({**plan.DEFAULTS, "model": "/m", "data": "/d", "output": str(root / "hs"),
                           "stop_grace_s": 10}, root, EventWriter(None))
    env = {**os.environ, "EORCH_RECIPE_MARKER": marker, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), str(root)])}
    result: dict[str, object] = {"baseline_mib": used_mib()}
    recipe.server = Child("vllm", [sys.executable, "-c", SERVER], env, root / "vllm.log")
    recipe.py = WarmPython("speculators", sys.executable, ["torch"], env, root / "speculators.log")
    recipe.py.order("gpu_hold", [])
    base = int(result["baseline_mib"])  # type: ignore[call-overload]
    result["seconds_to_hold_35gib"] = wait(lambda: used_mib() - base > 35_000, 180)
    result["held_mib"] = used_mib()
    result["gpu_pids_before"] = gpu_pids()
    result["marked_pids_before"] = sorted(pids_with_marker(marker))
    t0 = time.monotonic()
    detail = recipe.stop()
    result["stop_seconds"] = round(time.monotonic() - t0, 3)
    result["stop_detail"] = detail
    result["seconds_from_stop_return_to_memory_free"] = wait(lambda: used_mib() - base < 1000, 60)
    result["gpu_pids_after"] = gpu_pids()
    result["nvidia_smi_compute_apps_after"] = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=False).stdout
    result["logs"] = {name: (root / name).read_text().splitlines()[-3:] for name in ("vllm.log", "speculators.log")}
    result["ok"] = (detail["remaining"] == [] and detail["gpu_released"] is True
                    and result["seconds_from_stop_return_to_memory_free"] is not None)
    text = json.dumps(result, indent=2, default=str)
    (out / "gpu_recipe_stop_h200.json").write_text(text + "\n")
    print(text)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
