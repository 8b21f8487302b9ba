"""Memory and history size against an unread log backlog, through a real loopback sshd (issue 12).

For each backlog size: a job on the ssh host writes SIZE MB of log lines and exits before anyone follows
it; then, each as its own process of the real CLI,

1. ``eorch watch RUN --until-done`` follows the whole backlog (peak RSS, wall time),
2. ``eorch logs RUN > /dev/null`` prints it (peak RSS),

and the history's size (eorch.db + WAL) is compared with the log's. Peak RSS is the kernel's high-water
mark (VmHWM) of the process, read until it exits.

Run:  .venv/bin/python bench/backlog_memory_bench.py [--sizes 100,300,1000] [--lines error|info]
      [--src DIR]   (another checkout's code, e.g. `git archive main | tar -x -C DIR`, for a before/after)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from sshd import make_sshd

# Lines of the shape a vLLM server prints; "error": a server rejecting requests (what made the history
# grow past the log), "info": throughput lines.
LINES = {
    "error": "ERROR 12-01 10:00:00 [serving_chat.py:{i3}] request chatcmpl-{i} rejected: input too long "
             "(4242 > 4096 tokens) padding-padding-padding-padding\n",
    "info": "INFO 12-01 10:00:00 [metrics.py:{i3}] Avg prompt throughput: {i3}.0 tokens/s, Avg generation "
            "throughput: 12.3 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%\n",
}

JOB = """
import sys
size = int(sys.argv[1]) * 1024 * 1024
line = sys.argv[2]
out = sys.stdout.buffer
written = i = 0
block = []
while written < size:
    text = line.format(i=i, i3=i % 1000).encode()
    block.append(text)
    written += len(text)
    i += 1
    if len(block) == 4096:
        out.write(b"".join(block)); block = []
out.write(b"".join(block))
out.flush()
"""


def peak_rss_mb(argv: list[str], env: dict[str, str], cwd: Path, stdout: int | None = None) -> tuple[float, float, int]:
    """Run argv to completion; (peak RSS in MB, wall seconds, exit status)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE)
    peak_kb = 0
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[2:4]} exited {proc.returncode}: {err[-2000:]}")
    return peak_kb / 1024, time.monotonic() - start, proc.returncode


def measure(size_mb: int, lines: str, src: Path, sshd, base: Path) -> dict[str, object]:
    home = base / f"home-{size_mb}"
    home.mkdir()
    ssh_config = base / f"ssh_config-{size_mb}"
    ssh_config.write_text(sshd.ssh_config())
    (home / "config.toml").write_text(f'[ssh]\nconfig = ["{ssh_config}"]\n\n[monitor]\npoll_interval_s = 0.5\n')
    env = {**os.environ, "EORCH_HOME": str(home), "PYTHONPATH": str(src), "COLUMNS": "200"}
    cli = [sys.executable, "-m", "orchestrator.cli.main"]  # run in src: `-m` puts the cwd first on sys.path

    def eorch(*args: str) -> str:
        return subprocess.run([*cli, *args], env=env, cwd=src, capture_output=True, text=True, check=True).stdout

    root = base / f"remote-{size_mb}"
    eorch("host", "add", "gpu", "testbox", "--root", str(root))
    run = json.loads(eorch("launch", "--host", "gpu", "--json", "--", sys.executable, "-c", JOB, str(size_mb),
                           LINES[lines]))
    rc_file = Path(run["remote_dir"], "rc")
    while not rc_file.exists():
        time.sleep(0.2)
    log_bytes = Path(run["remote_dir"], "log").stat().st_size
    watch_mb, watch_s, _ = peak_rss_mb([*cli, "watch", run["id"], "--until-done"], env, src, subprocess.DEVNULL)
    logs_mb, logs_s, _ = peak_rss_mb([*cli, "logs", run["id"]], env, src, subprocess.DEVNULL)
    record = json.loads(eorch("show", run["id"], "--json"))
    db_bytes = sum(p.stat().st_size for p in home.glob("eorch.db*"))
    return {
        "backlog_mb": round(log_bytes / 2**20, 1), "lines": lines, "status": record["status"],
        "log_offset_ok": record["log_offset"] == log_bytes,
        "watch_peak_rss_mb": round(watch_mb, 1), "watch_s": round(watch_s, 1),
        "logs_peak_rss_mb": round(logs_mb, 1), "logs_s": round(logs_s, 1),
        "history_mb": round(db_bytes / 2**20, 2), "history_per_log": round(db_bytes / log_bytes, 4),
        "log_events": record.get("log_events"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,300,1000", help="backlog sizes in MB, comma-separated")
    ap.add_argument("--lines", choices=sorted(LINES), default="error")
    ap.add_argument("--src", type=Path, default=REPO, help="checkout whose orchestrator/ and worker/ to run")
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="eorch-backlog-") as tmp:
        base = Path(tmp)
        sshd = make_sshd(base / "sshd")
        try:
            results = []
            for size in (int(s) for s in args.sizes.split(",")):
                result = measure(size, args.lines, args.src.resolve(), sshd, base)
                print(json.dumps(result), flush=True)
                results.append(result)
        finally:
            sshd.stop()
    if args.out:
        args.out.write_text(json.dumps({"bench": "backlog_memory", "lines": args.lines, "results": results},
                                       indent=2) + "\n")


if __name__ == "__main__":
    main()
