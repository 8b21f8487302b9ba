"""Capture real CUDA fault output (issue 15) on a GPU machine: device-side assert, illegal memory access.

    python3 tests/engine/capture_cuda_faults.py OUT_DIR

Each fault is written to ``OUT_DIR/<name>.py`` and run by its own python, stdout+stderr to
``OUT_DIR/gpu_<name>.log`` (as a job's log is under eorch's wrapper), ``OUT_DIR`` replaced by ``<work>``; the
exit codes go to ``OUT_DIR/exit_codes.txt``.  Needs torch with CUDA (and triton for the illegal access).
Run through the device tool on the H200 (torch 2.11.0+cu130, triton 3.6.0); the logs are in tests/data/logs
as ``gpu-h200-torch2.11_<name>.log`` with hand-written expected verdicts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FAULTS = {
    # An index out of range on the GPU: the kernel's assertion fires, torch raises at the next sync.
    "device_assert": """
import torch
x = torch.zeros(1000, device="cuda")
idx = torch.tensor([5, 70000], device="cuda")
print("indexing", flush=True)
y = x[idx]
torch.cuda.synchronize()
print(y)
""",
    # A Triton kernel storing far outside its buffer: an illegal memory access.
    "illegal_access": """
import torch, triton, triton.language as tl

@triton.jit
def poke(ptr, off):
    tl.store(ptr + off, 1.0)

x = torch.zeros(16, device="cuda")
print("launching", flush=True)
poke[(1,)](x, 1 << 40)
torch.cuda.synchronize()
print(x)
""",
    # The same fault, then the process lets the CUDA context be torn down from a C++ destructor.
    "illegal_access_in_thread": """
import threading, torch, triton, triton.language as tl

@triton.jit
def poke(ptr, off):
    tl.store(ptr + off, 1.0)

def work():
    x = torch.zeros(16, device="cuda")
    poke[(1,)](x, 1 << 40)
    torch.cuda.synchronize()

t = threading.Thread(target=work)
t.start(); t.join()
y = torch.ones(4, device="cuda") * 2
print(y.cpu())
""",
}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    codes = []
    for name, code in FAULTS.items():
        script = out / f"{name}.py"
        script.write_text(code.lstrip())
        proc = subprocess.run([sys.executable, str(script)], check=False, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        (out / f"gpu_{name}.log").write_bytes(proc.stdout.replace(str(out).encode(), b"<work>"))
        codes.append(f"{name} {proc.returncode}")
    (out / "exit_codes.txt").write_text("\n".join(codes) + "\n")


if __name__ == "__main__":
    main()
