"""The detached wrapper around one job: ``worker.wrap RUN_DIR``, started as worker/boot.py says.

Started by ``worker.ops.launch`` in a new session (so its pid is the job's process group id). It records
who it is (pid, pgid, start time, boot id) in ``wrapper.json``, makes itself a child subreaper so that
escaped grandchildren are re-parented to it, runs the job as its child with stdout+stderr appended to
``log`` and ``EORCH_RUN_ID`` in its environment, forwards TERM to everything of the run, and writes the
job's exit code atomically to ``rc`` (``rc.tmp`` then rename).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

from worker import gpulock, procs

PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_GRACE_S = 5.0


def set_child_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc: int = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        return rc == 0
    except (OSError, AttributeError):
        return False


def write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def exit_code_of(status: int) -> int:
    # os.waitstatus_to_exitcode is Python >= 3.9; hosts may have 3.8.
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


class Wrapper:
    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        with open(os.path.join(run_dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.run_id: str = self.meta["run_id"]
        self.stopping = False

    def run_pids(self) -> list[int]:
        return procs.pids_with_marker("EORCH_RUN_ID", self.run_id)

    def on_terminate(self, signum: int, _frame: object) -> None:
        if self.stopping:  # our own killpg below signals us too
            return
        self.stopping = True
        procs.signal_group(os.getpgid(0), signal.SIGTERM)
        procs.signal_pids(self.run_pids(), signal.SIGTERM)

    def take_secrets(self) -> dict[str, str]:
        """The job's secret variables, from the 0600 file worker.ops wrote; deleted once read."""
        path = os.path.join(self.run_dir, "secret_env.json")
        try:
            with open(path) as f:
                secrets: dict[str, str] = json.load(f)
        except FileNotFoundError:
            return {}
        os.unlink(path)
        return secrets

    def start_job(self, log: int) -> subprocess.Popen[bytes] | int:
        env = dict(os.environ)  # the login environment as it is: the wrapper itself set nothing in it
        env.update(self.meta.get("env", {}))
        env.update(self.take_secrets())
        env["EORCH_RUN_ID"] = self.run_id
        env["EORCH_RUN_DIR"] = self.run_dir
        try:
            return subprocess.Popen(
                self.meta["argv"],
                cwd=self.meta.get("cwd") or None,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        except OSError as err:
            os.write(log, f"eorch: cannot start {self.meta['argv'][0]!r}: {err.strerror}\n".encode())
            return 127

    def reap_until(self, main_pid: int) -> int:
        """Reap every child (we are a subreaper) until the job's main process exits; return its rc."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return 255
            if pid == main_pid:
                return exit_code_of(status)

    def end_leftovers(self) -> None:
        """Processes of the run that outlived its main process are stopped: TERM, grace, KILL."""
        deadline = time.monotonic() + LEFTOVER_GRACE_S
        procs.signal_pids(self.run_pids(), signal.SIGTERM)
        while self.run_pids() and time.monotonic() < deadline:
            self.reap_nohang()
            time.sleep(0.05)
        procs.signal_pids(self.run_pids(), signal.SIGKILL)
        self.reap_nohang()

    @staticmethod
    def reap_nohang() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def run(self) -> int:
        subreaper = set_child_subreaper()
        write_atomic(
            os.path.join(self.run_dir, "wrapper.json"),
            json.dumps(
                {
                    "pid": os.getpid(),
                    "pgid": os.getpgid(0),
                    "start_time": procs.start_time(os.getpid()),
                    "boot_id": procs.boot_id(),
                    "subreaper": subreaper,
                }
            ),
        )
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self.on_terminate)
        log = os.open(os.path.join(self.run_dir, "log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        job = self.start_job(log)
        rc = job if isinstance(job, int) else self.reap_until(job.pid)
        self.end_leftovers()
        os.close(log)
        write_atomic(os.path.join(self.run_dir, "rc"), f"{rc}\n")
        gpulock.release(self.run_dir)  # after rc: a lock seen without its rc is still held
        return rc


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: worker.wrap RUN_DIR", file=sys.stderr)
        return 2
    return Wrapper(argv[0]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
