"""Runs on a Slurm login node: submit the wrapper with ``sbatch``, judge liveness from ``squeue``, ``scancel``.

A Slurm run's directory is the same as a direct run's (meta.json, log, rc, ...) plus ``job.sh`` (the batch
script: ``exec python3 -I -c BOOT ROOT worker.wrap RUN_DIR``, see worker/boot.py), ``slurm.json`` (the job id)
and ``slurm.out`` (Slurm's own output: its error lines land there). The wrapper runs on the compute node, so
the run directory must be on a filesystem shared with the compute nodes, as the home directories of real
clusters are.

Liveness comes from the scheduler, never from /proc (the wrapper's pid is on another machine):
- PENDING, CONFIGURING, ... → not started (with Slurm's pending reason);
- RUNNING, COMPLETING, ... → alive, even when ``rc`` is already there: the verdict waits until Slurm says
  how the job ended, so that a job Slurm ended itself is not mistaken for an ordinary failure;
- gone from the queue, or ended → the ``rc`` file decides; without one the run is lost. When Slurm ended the
  job itself (CANCELLED by someone else, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ...) the run is lost
  even if the wrapper managed to write an ``rc`` on its way out (scancel sends TERM first, which the wrapper
  survives long enough to record 143); that rc is reported as ``wrapper_rc``.

``sacct`` is not used: it needs slurmdbd, which many clusters (and the tests) do not run.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from typing import Any

from worker import boot
from worker.ops import OpError, _file_facts, _read_json, _read_rc, output_facts

JOB_FILE = "slurm.json"
CANCEL_MARKER = "cancel_requested"
NOT_STARTED_STATES = frozenset({
    "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
})
ACTIVE_STATES = frozenset({
    "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING",
})
ENDED_BY_SLURM = frozenset({
    "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED",
})
# An array would run the wrapper several times into one run directory; --wrap would replace job.sh.
UNSUPPORTED_SBATCH = frozenset({"--array", "--wrap"})
COMMAND_TIMEOUT_S = 60.0
KILL_CONFIRM_S = 120.0


class SchedulerUnavailable(OpError):
    """A Slurm client command failed (controller down, bad SLURM_CONF): liveness is unknown, not 'gone'."""


def _client(argv: list[str]) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(argv[0])
    if exe is None:
        raise OpError(f"{argv[0]} not found on the host: is it a Slurm login node? "
                      "(a non-default config needs `eorch host add ... --env SLURM_CONF=...`)")
    try:
        return subprocess.run([exe, *argv[1:]], check=False, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        raise SchedulerUnavailable(f"{argv[0]} did not answer within {COMMAND_TIMEOUT_S:.0f} s") from err


def job_id_of(run_dir: str) -> str | None:
    info = _read_json(os.path.join(run_dir, JOB_FILE))
    return str(info["job_id"]) if info and info.get("job_id") else None


def batch_script(run_dir: str) -> str:
    """The batch script: the wrapper replaces the shell, so Slurm's batch step *is* the wrapper."""
    worker_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = ["exec", *boot.argv(sys.executable, worker_root, "worker.wrap", run_dir)]
    return "#!/bin/sh\n" + shlex.join(argv) + "\n"


def submit(run_dir: str, run_id: str, sbatch_args: list[str]) -> dict[str, Any]:
    """sbatch the wrapper for a run directory already laid out by ``ops.launch``; return the job id at once."""
    for arg in sbatch_args:
        if not arg.startswith("-"):
            raise OpError(f"bad sbatch argument {arg!r}: give options only, like --partition=gpu")
        if arg.split("=", 1)[0] in UNSUPPORTED_SBATCH or arg.startswith("-a"):
            raise OpError(f"sbatch argument {arg!r} is not supported: one run is one job running eorch's wrapper")
    script = os.path.join(run_dir, "job.sh")
    with open(script, "w") as f:
        f.write(batch_script(run_dir))
    os.chmod(script, 0o755)
    argv = ["sbatch", "--parsable", "--job-name", f"eorch-{run_id}", "--output", os.path.join(run_dir, "slurm.out"),
            "--chdir", run_dir, *sbatch_args, script]
    proc = _client(argv)
    if proc.returncode != 0:
        raise OpError(f"sbatch refused the job: {proc.stderr.strip() or proc.stdout.strip()}")
    job_id = proc.stdout.strip().split(";")[0]  # "ID" or "ID;cluster"
    if not job_id:
        raise OpError(f"sbatch printed no job id: {proc.stdout!r}")
    with open(os.path.join(run_dir, JOB_FILE), "w") as f:
        json.dump({"job_id": job_id, "sbatch": argv, "submitted_at": time.time()}, f)
    return {"run_dir": run_dir, "scheduler": "slurm", "job_id": job_id, "log_path": os.path.join(run_dir, "log")}


def queue_states(job_ids: list[str]) -> dict[str, dict[str, str | None]]:
    """State, reason and node of each job the controller still knows (finished ones for MinJobAge)."""
    if not job_ids:
        return {}
    proc = _client(["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i|%T|%r|%N"])
    if proc.returncode != 0:
        # Every id unknown (purged after MinJobAge) is an error for squeue, yet it means "all gone".
        if "Invalid job id" in proc.stderr:
            return {}
        raise SchedulerUnavailable(f"squeue failed: {proc.stderr.strip()}")
    states: dict[str, dict[str, str | None]] = {}
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            reason = None if parts[2] in ("None", "") else parts[2]
            states[parts[0]] = {"state": parts[1], "reason": reason, "node": parts[3] or None}
    return states


def _status(run_dir: str, job_id: str, entry: dict[str, str | None] | None, error: str | None) -> dict[str, Any]:
    rc = _read_rc(run_dir)
    wrapper_started = bool(_read_json(os.path.join(run_dir, "wrapper.json")))
    state = entry["state"] if entry else None
    scheduler: dict[str, Any] = {"kind": "slurm", "job_id": job_id, "state": state or "GONE",
                                 "reason": entry["reason"] if entry else None, "node": entry["node"] if entry else None}
    pending_reason = None
    if error is not None:
        # Unknown: decide nothing unless the wrapper's rc already did.
        scheduler["state"], scheduler["error"] = "UNKNOWN", error
        started, alive = wrapper_started or rc is not None, rc is None and wrapper_started
    elif state in NOT_STARTED_STATES:
        started, alive = False, False
        pending_reason = scheduler["reason"]
    elif state in ACTIVE_STATES:
        started, alive = True, True
    else:
        started, alive = True, False
        cancelled_by_us = state == "CANCELLED" and os.path.exists(os.path.join(run_dir, CANCEL_MARKER))
        if state in ENDED_BY_SLURM and not cancelled_by_us and rc is not None:
            scheduler["wrapper_rc"], rc = rc, None
    log_size, log_inode = _file_facts(os.path.join(run_dir, "log"))
    events_size, _ = _file_facts(os.path.join(run_dir, "events.jsonl"))
    return {
        "run_dir": run_dir,
        "exists": os.path.isdir(run_dir),
        "marked_pids": [],
        "cancel_requested": os.path.exists(os.path.join(run_dir, CANCEL_MARKER)),
        "started": started,
        "rc": rc,
        "alive": alive,
        "boot_changed": False,
        "log_size": log_size,
        "log_inode": log_inode,
        "events_size": events_size,
        **output_facts(run_dir),
        "pending_reason": pending_reason,
        "scheduler": scheduler,
    }


def status_many(run_dirs: list[str]) -> dict[str, dict[str, Any]]:
    """The status of each Slurm run among run_dirs (one squeue call for all); other runs are left out."""
    jobs = {d: j for d in run_dirs if (j := job_id_of(d))}
    if not jobs:
        return {}
    error = None
    try:
        states = queue_states(sorted(set(jobs.values())))
    except SchedulerUnavailable as err:
        states, error = {}, str(err)
    return {d: _status(d, j, states.get(j), error) for d, j in jobs.items()}


def _wait_left_queue(job_id: str, timeout: float) -> str | None:
    """Wait until the job is neither pending nor active; return its last state ('GONE' once purged)."""
    deadline = time.monotonic() + timeout
    while True:
        entry = queue_states([job_id]).get(job_id)
        state = entry["state"] if entry else "GONE"
        if state not in NOT_STARTED_STATES and state not in ACTIVE_STATES:
            return state
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def cancel(run_dir: str, run_id: str, grace_s: float = 10.0) -> dict[str, Any]:
    """TERM the whole job (batch shell = wrapper, and every process of it), ``scancel`` after the grace period,
    and confirm it left the queue."""
    job_id = job_id_of(run_dir)
    if job_id is None:
        raise OpError(f"{run_dir} is not a Slurm run")
    with open(os.path.join(run_dir, CANCEL_MARKER), "w") as f:
        f.write(f"{time.time()}\n")
    entry = queue_states([job_id]).get(job_id)
    if entry is not None and entry["state"] in ACTIVE_STATES:
        _client(["scancel", "--signal=TERM", "--full", job_id])
    elif entry is not None and entry["state"] in NOT_STARTED_STATES:
        _client(["scancel", job_id])
    final = _wait_left_queue(job_id, grace_s)
    killed = False
    if final is None:
        killed = True
        _client(["scancel", job_id])  # TERM again, then KILL after the cluster's KillWait
        final = _wait_left_queue(job_id, KILL_CONFIRM_S)
    return {"run_dir": run_dir, "killed": killed, "remaining": [] if final else [f"slurm job {job_id}"],
            "rc": _read_rc(run_dir), "scheduler": {"kind": "slurm", "job_id": job_id, "state": final}}


def check() -> dict[str, Any]:
    """The cluster as this login node sees it: Slurm version and partitions (fails if the controller is down)."""
    version = _client(["sbatch", "--version"]).stdout.strip()
    proc = _client(["sinfo", "-h", "-o", "%P|%a|%D|%T"])
    if proc.returncode != 0:
        raise OpError(f"sinfo failed: {proc.stderr.strip()}")
    partitions = []
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            partitions.append({"partition": parts[0], "avail": parts[1], "nodes": parts[2], "state": parts[3]})
    return {"slurm_version": version, "user": getpass.getuser(), "partitions": partitions}
