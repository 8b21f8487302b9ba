"""How fast is `eorch runs` with filters (and search/stats/similar) on a big history?

Generates a history migrated to head with N runs and M events (default 100k / 10M) in a temp dir (or
--db PATH, reused when it already exists), then times each query the CLI makes through the same
functions (orchestrator.core.history), reporting the median of --repeat runs.

    .venv/bin/python bench/history_bench.py                      # 100k runs, 10M events
    .venv/bin/python bench/history_bench.py --runs 10000 --events 1000000 --repeat 20
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from orchestrator.core import history
from orchestrator.core.history import RunFilter
from orchestrator.store import history as store_history
from orchestrator.store.db import open_store

HOSTS = [f"gpu{i}" for i in range(8)]
MODELS = [f"/models/{m}" for m in ("llama-8b", "llama-70b", "qwen-7b", "qwen-32b", "mistral-7b")]
CAUSES = [
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate {n} GiB", "cuda_oom"),
    ("RuntimeError", "NCCL error: unhandled system error, rank {n}", "nccl_error"),
    ("AssertionError", "block_hashes length {n} does not match num_blocks", None),
    ("ValueError", "No available memory for the cache blocks ({n} GiB)", "kv_cache_memory"),
    ("TimeoutError", "RPC call to sample_tokens timed out after {n} s", "rpc_timeout"),
]
STATUSES = ["succeeded"] * 6 + ["failed"] * 3 + ["cancelled", "lost"]
EVENT_KINDS = ["phase_changed", "shards_progressed", "progress_reported", "status", "step_progress"]
BATCH = 50_000


def generate(db: Path, n_runs: int, n_events: int, seed: int = 7) -> None:
    open_store(db)  # migrate to head (FTS table + triggers included)
    rng = random.Random(seed)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.executemany("INSERT INTO hosts(name, destination, port, root, python, created_at) VALUES (?,?,?,?,?,?)",
                     [(h, h, None, "/r", "python3", "2026-01-01 00:00:00") for h in HOSTS])
    start = datetime(2026, 11, 29) - timedelta(days=365)
    step = timedelta(days=365) / n_runs
    rows = []
    run_ids = []
    t0 = time.perf_counter()
    for i in range(n_runs):
        rid = f"{i:08x}"
        run_ids.append(rid)
        created = start + step * i
        status = rng.choice(STATUSES)
        cause = sig = exc = fp = None
        if status == "failed":
            exc, msg, sig = rng.choice(CAUSES)
            root = {"exception": exc, "message": msg.format(n=rng.randint(1, 99)), "process": "Worker_TP0",
                    "signature": sig, "traceback": f'Traceback (most recent call last):\n  File "/v/x.py", line '
                    f'{rng.randint(1, 999)}, in step\n{exc}: {msg.format(n=1)}\n'}
            cause = json.dumps(root)
            fp = history.fingerprint_of(root)
        fmt = created.strftime("%Y-%m-%d %H:%M:%S.%f")
        rows.append((rid, f"run-{rng.choice(['eagle3', 'serve', 'bench'])}-{i}", rng.choice(HOSTS), "eagle3",
                     json.dumps(["vllm", "serve"]), "{}", rng.choice(MODELS), status, "stopped", 0,
                     fmt, fmt, fmt, cause, sig, exc, fp, 0, 0, rng.choice(["0.32.0", "0.33.0"])))
        if len(rows) >= BATCH:
            _insert_runs(conn, rows)
            rows.clear()
    _insert_runs(conn, rows)
    conn.commit()
    t1 = time.perf_counter()
    per_run = max(1, n_events // n_runs)
    done = 0
    batch: list[tuple[Any, ...]] = []
    for idx, rid in enumerate(run_ids):
        ts = (start + step * idx).strftime("%Y-%m-%d %H:%M:%S.%f")
        for j in range(per_run):
            batch.append((rid, ts, EVENT_KINDS[j % 5], j, '{"kind":"shards_progressed","done":1,"total":8}'))
        done += per_run
        if len(batch) >= BATCH * 4:
            conn.executemany("INSERT INTO events(run_id, ts, kind, line_no, data) VALUES (?,?,?,?,?)", batch)
            batch.clear()
        if done >= n_events:
            break
    conn.executemany("INSERT INTO events(run_id, ts, kind, line_no, data) VALUES (?,?,?,?,?)", batch)
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    print(f"generated {n_runs} runs in {t1 - t0:.1f}s and {done} events in {time.perf_counter() - t1:.1f}s "
          f"→ {db.stat().st_size / 1e9:.2f} GB")


def _insert_runs(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    conn.executemany(
        "INSERT INTO runs(id, name, host, kind, command, env, model, status, phase, cancel_requested, created_at,"
        " started_at, ended_at, root_cause, signature, exception, fingerprint, log_offset, events_offset,"
        " vllm_version) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--db", type=Path, help="reuse/keep the generated history here")
    args = ap.parse_args()
    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory(prefix="eorch-bench-")
        args.db = Path(tmp.name) / "eorch.db"
    if not args.db.exists():
        generate(args.db, args.runs, args.events)
    maker = open_store(args.db)
    since = datetime(2026, 11, 29) - timedelta(days=7)
    cases: dict[str, Callable[[Any], Any]] = {
        "runs (no filter)": lambda s: store_history.filtered_runs(s, RunFilter()),
        "runs --status failed": lambda s: store_history.filtered_runs(s, RunFilter(status="failed")),
        "runs --host gpu3 --since 7d": lambda s: store_history.filtered_runs(s, RunFilter(host="gpu3", since=since)),
        "runs --status lost --host gpu5": lambda s: store_history.filtered_runs(s, RunFilter(status="lost", host="gpu5")),
        "runs --name 'run-bench-9*'": lambda s: store_history.filtered_runs(s, RunFilter(name="run-bench-9*")),
        "runs --signature rpc_timeout": lambda s: store_history.filtered_runs(s, RunFilter(signature="rpc_timeout")),
        "runs --exception OutOfMemoryError": lambda s: store_history.filtered_runs(
            s, RunFilter(exception="OutOfMemoryError")),
        "runs --model /models/qwen-32b --status failed": lambda s: store_history.filtered_runs(
            s, RunFilter(model="/models/qwen-32b", status="failed")),
        "runs --since 7d --signature nccl_error --host gpu1": lambda s: store_history.filtered_runs(
            s, RunFilter(since=since, signature="nccl_error", host="gpu1")),
        "search block_hashes": lambda s: store_history.search(s, "block_hashes"),
        "similar <a failed run>": lambda s: _similar(s, _a_failed(s)),
        "stats": lambda s: store_history.stats(s),
        "stats --host gpu2": lambda s: store_history.stats(s, host="gpu2"),
    }
    print(f"history: {args.db} · median of {args.repeat} · limit 50 rows per list (the CLI default)")
    for label, fn in cases.items():
        with maker() as s:
            ms, result = timed(lambda fn=fn, s=s: fn(s), args.repeat)
        n = len(result) if isinstance(result, list) else (len(result[1]) if isinstance(result, tuple) else "-")
        print(f"  {label:<52} {ms:8.2f} ms   ({n} rows)")
    if tmp is not None:
        tmp.cleanup()


def _similar(s: Any, run_id: str) -> list[Any]:
    """What `eorch similar` queries: the earlier runs with the run's failure fingerprint."""
    from orchestrator.store.models import Run

    run = s.get(Run, run_id)
    return store_history.earlier_with_fingerprint(s, run, run.fingerprint or history.fingerprint_of(run.root_cause))


def _a_failed(s: Any) -> str:
    from sqlalchemy import select

    from orchestrator.store.models import Run

    return str(s.scalar(select(Run.id).where(Run.status == "failed").order_by(Run.created_at.desc()).limit(1)))


if __name__ == "__main__":
    main()
