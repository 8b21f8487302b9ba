"""Operations the controller asks of a host, as plain functions over JSON-able values.

They are served by ``worker.cli`` (one-shot calls and the long-lived agent). Each returns a dict; a
problem the user must fix is raised as ``OpError`` with a one-line message.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from worker import boot, fingerprint, gpulock, kernlog, patching, preflight, procs
from worker.protocol import LaunchReply, LaunchSpec, RunStatusReport, StatusManyReport

NVIDIA_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]


CANCEL_MARKER = "cancel_requested"  # written in the run directory by cancel, before any signal


class OpError(Exception):
    """A request that cannot be done; the message is shown to the user."""


def _read_json(path: str) -> dict[str, Any] | None:
    """The JSON object in path; None when it is missing, unreadable or not an object."""
    try:
        with open(path) as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class CorruptRunFile(Exception):
    """A file of a run directory that eorch wrote but cannot read back: only that run's facts are unknown."""


def wrapper_info(run_dir: str) -> dict[str, Any] | None:
    """The wrapper's ``wrapper.json`` (pid, pgid, start_time, boot_id); None before the wrapper wrote it.

    The wrapper writes it atomically, so one that is there but does not read back is corrupt, never half
    written: CorruptRunFile says what is wrong with it.
    """
    path = os.path.join(run_dir, "wrapper.json")
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise CorruptRunFile(f"wrapper.json unreadable: {err.strerror}") from None
    try:
        info = json.loads(text)
    except ValueError:
        raise CorruptRunFile(f"wrapper.json is not JSON ({len(text)} bytes)") from None
    if not isinstance(info, dict):
        raise CorruptRunFile(f"wrapper.json holds a {type(info).__name__}, not the wrapper's identity")
    for key in ("pid", "pgid"):
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise CorruptRunFile(f"wrapper.json has no valid {key} ({value!r})")
    start = info.get("start_time")
    if start is not None and (isinstance(start, bool) or not isinstance(start, int)):
        raise CorruptRunFile(f"wrapper.json has a bad start_time ({start!r})")
    return info


def _read_rc(run_dir: str) -> int | None:
    try:
        with open(os.path.join(run_dir, "rc")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def launch(spec: LaunchSpec) -> LaunchReply:
    """Start ``worker.wrap`` detached for a new run and return its identity once it is recorded.

    With ``scheduler="slurm"`` the wrapper is submitted with sbatch instead (worker.slurm) and the job id
    comes back at once; the wrapper starts whenever Slurm runs the job.  ``gpu_locks``: GPU indices the run
    takes (worker.gpulock) before its wrapper starts; one held by another live run refuses the launch.

    The run directory is 0700 and its files 0600 (a shared box's other users read none of it).
    ``secret_env`` is not written to ``meta.json``: it goes to ``secret_env.json``, which the wrapper reads
    and deletes before it starts the job.
    """
    run_dir, run_id, argv, env, scheduler = spec.run_dir, spec.run_id, spec.argv, spec.env, spec.scheduler
    cwd: str | None = spec.cwd
    if not argv:
        raise OpError("no command given")
    if cwd and not os.path.isdir(os.path.expanduser(cwd)):
        raise OpError(f"working directory does not exist on the host: {cwd}")
    cwd = os.path.expanduser(cwd) if cwd else None
    search_path = env.get("PATH", os.environ.get("PATH", ""))
    exe = argv[0]
    if os.sep in exe:
        resolved = os.path.join(cwd or os.getcwd(), os.path.expanduser(exe))
        if not os.access(resolved, os.X_OK):
            raise OpError(f"command not found or not executable on the host: {exe}")
    elif shutil.which(exe, path=search_path) is None:
        raise OpError(f"command not found on the host: {exe}")
    if os.path.exists(run_dir):
        raise OpError(f"run directory already exists on the host: {run_dir}")
    os.makedirs(run_dir, mode=0o700)
    os.chmod(run_dir, 0o700)  # whatever the umask
    locks: dict[str, Any] = {}
    if spec.gpu_locks and scheduler != "slurm":
        root = os.path.dirname(os.path.dirname(os.path.abspath(run_dir)))
        try:
            locks = gpulock.acquire(root, run_id, run_dir, spec.gpu_locks, spec.force_locks)
        except gpulock.GpuBusy as err:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise OpError(str(err)) from None
    meta = {
        "run_id": run_id,
        "argv": argv,
        "env": env,
        "secret_keys": sorted(spec.secret_env),
        "cwd": cwd,
        "launched_at": time.time(),
    }
    if spec.secret_env:
        _write_private(os.path.join(run_dir, SECRET_ENV_FILE), json.dumps(spec.secret_env))
    _write_private(os.path.join(run_dir, "meta.json"), json.dumps(meta))
    _write_private(os.path.join(run_dir, "log"), "")
    for name, content in spec.files.items():
        if os.sep in name or name.startswith("."):
            gpulock.release(run_dir)
            raise OpError(f"bad run file name {name!r}")
        _write_private(os.path.join(run_dir, name), content)
    if scheduler == "slurm":
        from worker import slurm

        return LaunchReply.from_json(slurm.submit(run_dir, run_id, list(spec.sbatch_args)))
    worker_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    err_fd = os.open(os.path.join(run_dir, "wrapper.err"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(err_fd, "ab") as err_file:  # the wrapper keeps its own copy
        subprocess.Popen(
            boot.argv(sys.executable, worker_root, "worker.wrap", run_dir),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
            cwd=run_dir,
            close_fds=True,
        )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        info = _read_json(os.path.join(run_dir, "wrapper.json"))
        if info:
            return LaunchReply(run_dir, os.path.join(run_dir, "log"), pid=info.get("pid"), pgid=info.get("pgid"),
                               start_time=info.get("start_time"), boot_id=info.get("boot_id"),
                               subreaper=info.get("subreaper"), gpu_locks=locks or None)
        time.sleep(0.01)
    gpulock.release(run_dir)
    raise OpError("the wrapper did not start within 15 s (see wrapper.err in the run directory)")


SECRET_ENV_FILE = "secret_env.json"


def _write_private(path: str, text: str) -> None:
    """A new file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _file_facts(path: str) -> tuple[int | None, int | None]:
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    return st.st_size, st.st_ino


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def output_facts(run_dir: str) -> dict[str, Any]:
    """When the job last wrote its log / step events, and when it ended (the rc file), on the host's clock."""
    return {"log_mtime": _mtime(os.path.join(run_dir, "log")),
            "events_mtime": _mtime(os.path.join(run_dir, "events.jsonl")),
            "rc_mtime": _mtime(os.path.join(run_dir, "rc"))}


def status(run_dir: str) -> dict[str, Any]:
    """Liveness of one run: exit code if written, whether its wrapper is alive, and log facts."""
    return run_status(run_dir).to_json()


def run_status(run_dir: str) -> RunStatusReport:
    """The status op's report (CorruptRunFile when the run's own files say nonsense)."""
    from worker import slurm

    if slurm.job_id_of(run_dir):
        return RunStatusReport.from_json(slurm.status_many([run_dir])[run_dir])
    info = wrapper_info(run_dir)
    rc = _read_rc(run_dir)
    alive = False
    boot_changed = False
    if info:
        boot_changed = bool(info.get("boot_id")) and info.get("boot_id") != procs.boot_id()
        alive = not boot_changed and procs.is_same_process(int(info["pid"]), info.get("start_time"))
    if rc is not None:
        # An rc is final; a half-finished wrapper still reaping leftovers is not "alive" for us.
        alive = False
    log_size, log_inode = _file_facts(os.path.join(run_dir, "log"))
    events_size, _ = _file_facts(os.path.join(run_dir, "events.jsonl"))
    exists = os.path.isdir(run_dir)
    facts = output_facts(run_dir)
    return RunStatusReport(
        run_dir=run_dir,
        exists=exists,
        # A directory removed under a live job: what still carries the run's marker (cancel can end it).
        marked_pids=[] if exists else procs.pids_with_marker("EORCH_RUN_ID", os.path.basename(run_dir)),
        cancel_requested=os.path.exists(os.path.join(run_dir, CANCEL_MARKER)),
        started=bool(info),
        rc=rc,
        alive=alive,
        boot_changed=boot_changed,
        log_size=log_size,
        log_inode=log_inode,
        events_size=events_size,
        log_mtime=facts["log_mtime"],
        events_mtime=facts["events_mtime"],
        rc_mtime=facts["rc_mtime"],
    )


def _status_or_error(run_dir: str) -> RunStatusReport:
    """One run's report for status_many: a run whose facts cannot be read is reported as such, alone."""
    try:
        return run_status(run_dir)
    except CorruptRunFile as err:
        return RunStatusReport.unreadable(run_dir, str(err))
    except Exception as err:  # noqa: BLE001 - one run's bad file must not hide every other run's status
        return RunStatusReport.unreadable(run_dir, f"eorch's worker failed reading it: {type(err).__name__}: {err}")


def status_many(run_dirs: list[str]) -> dict[str, Any]:
    from worker import slurm

    scheduled = slurm.status_many(run_dirs)  # Slurm runs: one squeue call for all of them
    runs = [RunStatusReport.from_json(scheduled[d]) if d in scheduled else _status_or_error(d) for d in run_dirs]
    return StatusManyReport(runs, procs.boot_id(), time.time()).to_json()


def cancel(run_dir: str, run_id: str, grace_s: float = 10.0) -> dict[str, Any]:
    """TERM everything of the run, KILL what is left after the grace period, confirm none remains."""
    from worker import slurm

    if slurm.job_id_of(run_dir):
        return slurm.cancel(run_dir, run_id, grace_s)
    exists = os.path.isdir(run_dir)
    if exists:  # the request is kept on the host: whoever records the end knows it was a cancel
        with open(os.path.join(run_dir, CANCEL_MARKER), "w") as f:
            f.write(f"{time.time()}\n")
    try:
        info = wrapper_info(run_dir) or {}
    except CorruptRunFile:
        info = {}  # no wrapper to signal: its job still carries the run's marker, which is what is ended
    wrapper_pid = int(info["pid"]) if info else 0
    wrapper_alive = bool(wrapper_pid) and procs.is_same_process(wrapper_pid, info.get("start_time"))
    if wrapper_alive:
        procs.signal_pids([wrapper_pid], signal.SIGTERM)
        procs.signal_group(int(info["pgid"]), signal.SIGTERM)
    procs.signal_pids(procs.pids_with_marker("EORCH_RUN_ID", run_id), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    killed = False
    while time.monotonic() < deadline:
        if not procs.pids_with_marker("EORCH_RUN_ID", run_id):
            break
        time.sleep(0.05)
    else:
        killed = True
        procs.signal_pids(procs.pids_with_marker("EORCH_RUN_ID", run_id), signal.SIGKILL)
    # The wrapper writes rc once the job is gone; give it a moment, then make sure it is gone too.
    deadline = time.monotonic() + 5
    while wrapper_alive and _read_rc(run_dir) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)
    left = procs.pids_with_marker("EORCH_RUN_ID", run_id)
    return {"run_dir": run_dir, "exists": exists, "killed": killed, "remaining": left, "rc": _read_rc(run_dir)}


def _gpus() -> list[dict[str, Any]]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(NVIDIA_QUERY, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append(
                {"index": int(parts[0]), "name": parts[1], "memory_used_mib": int(parts[2]),
                 "memory_total_mib": int(parts[3])}
            )
    return gpus


def check(root: str) -> dict[str, Any]:
    """Facts about the host: OS, Python, free disk under the eorch root, GPUs."""
    os.makedirs(root, exist_ok=True)
    usage = shutil.disk_usage(root)
    return {
        "hostname": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "root": root,
        "disk_free_bytes": usage.free,
        "disk_total_bytes": usage.total,
        "boot_id": procs.boot_id(),
        "gpus": _gpus(),
    }


def slurm_check() -> dict[str, Any]:
    from worker import slurm

    return slurm.check()


def resolve_root(root: str) -> dict[str, Any]:
    path = os.path.abspath(os.path.expanduser(root))
    os.makedirs(os.path.join(path, "runs"), exist_ok=True)
    return {"root": path, "boot_id": procs.boot_id()}


def launch_op(**args: Any) -> dict[str, Any]:
    return launch(LaunchSpec.from_json(args)).to_json()


# One entry per operation the controller may ask for: name -> function of the request's args, returning a dict.
OPERATIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "launch": launch_op,
    "status": status,
    "status_many": status_many,
    "cancel": cancel,
    "check": check,
    "slurm_check": slurm_check,
    "resolve_root": resolve_root,
    "patch": patching.op,
    "fingerprint": fingerprint.op,
    "preflight": preflight.op,
    "kernlog": kernlog.op,
}
