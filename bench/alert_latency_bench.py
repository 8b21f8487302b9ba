"""Crash-to-alert latency: from the crash line written on the host to the `failed` alert at a json:// receiver.

Everything is real and local: an OpenSSH sshd on 127.0.0.1 (tests/sshd.py), `eorch daemon` following
the host through it, and a tiny HTTP receiver on 127.0.0.1 configured as `json://` alert URL. Each trial
launches a job that prints a line, waits for a go-file, then writes a Python traceback and exits 1; the job
records time.time() just before writing the crash line, the receiver records when the alert arrived.

    .venv/bin/python bench/alert_latency_bench.py --trials 20 --poll 1.0
    .venv/bin/python bench/alert_latency_bench.py --trials 20 --poll 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from sshd import make_sshd

JOB = r"""
import os, sys, time
go, stamp = sys.argv[1], sys.argv[2]
print("job up, waiting for the go file", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
sys.stderr.write('Traceback (most recent call last):\n  File "/job.py", line 7, in <module>\n    step()\n')
sys.stderr.flush()
with open(stamp + ".tmp", "w") as f:
    f.write(repr(time.time()))
os.replace(stamp + ".tmp", stamp)
sys.stderr.write("RuntimeError: block_hashes mismatch (benchmark crash)\n")
sys.stderr.flush()
sys.exit(1)
"""


class Receiver:
    def __init__(self) -> None:
        self.arrivals: list[tuple[float, dict]] = []
        arrivals = self.arrivals

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                arrivals.append((time.time(), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/alerts"


def eorch(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"eorch {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def wait(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.002)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--poll", type=float, default=1.0, help="monitor poll_interval_s (liveness checks)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="eorch-latency-"))
    sshd = make_sshd(tmp / "sshd")
    receiver = Receiver()
    home = tmp / "home"
    home.mkdir()
    (tmp / "ssh_config").write_text(sshd.ssh_config())
    (home / "config.toml").write_text(
        f'[ssh]\nconfig = ["{tmp / "ssh_config"}"]\n[monitor]\npoll_interval_s = {args.poll}\n'
        f'[alerts]\nurls = ["{receiver.url}"]\ndesktop = false\n')
    env = {**os.environ, "EORCH_HOME": str(home)}
    eorch(env, "host", "add", "box", "testbox", "--root", str(tmp / "remote"))
    daemon = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "daemon"], env=env, cwd=REPO)
    latencies: list[float] = []
    try:
        for trial in range(args.trials):
            go, stamp = tmp / f"go-{trial}", tmp / f"crash-{trial}"
            run = json.loads(eorch(env, "launch", "--host", "box", "--json", "--", sys.executable, "-c", JOB,
                                   str(go), str(stamp)))
            db = sqlite3.connect(home / "eorch.db")
            wait(lambda db=db, run=run: db.execute("select log_offset from runs where id=?", (run["id"],)).fetchone()[0] > 0,
                 60, "the daemon to follow the run")
            time.sleep(0.2 + (trial % 5) * 0.13)  # crash at varying points of the poll cycle
            go.touch()
            arrived = wait(lambda run=run: next((t for t, b in receiver.arrivals
                                         if run["id"] in b.get("message", "") and b.get("type") == "failure"), None),
                           60, "the failed alert")
            crashed = float(wait(lambda stamp=stamp: stamp.exists() and stamp.read_text(), 5, "crash stamp"))
            latencies.append((arrived - crashed) * 1000)
            db.close()
            print(f"trial {trial + 1:2d}: run {run['id']} crash → alert {latencies[-1]:7.1f} ms", flush=True)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        sshd.stop()
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    print(f"poll_interval_s={args.poll}: n={len(latencies)} median {statistics.median(latencies):.1f} ms · "
          f"p95 {p95:.1f} ms · max {latencies[-1]:.1f} ms")


if __name__ == "__main__":
    main()
