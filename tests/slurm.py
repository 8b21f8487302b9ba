"""A real one-node Slurm cluster for the tests, started without systemd (see the shared notes on Slurm).

A munged of its own (own socket under /run, named in ``AuthInfo``, so that test sessions running at the same
time never share or stop each other's), slurmctld and slurmd with their own ``slurm.conf`` in a scratch
directory, on free ports, ``proctrack/linuxproc`` + ``task/none`` (no cgroups), no slurmdbd (eorch does not
use sacct). Client commands need ``SLURM_CONF`` in their environment: ``cluster.env``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing_tools() -> list[str]:
    return [t for t in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")
            if shutil.which(t) is None and not os.path.exists(f"/usr/sbin/{t}")]


def munge_works(socket_path: Path) -> bool:
    try:
        cred = subprocess.run(["munge", "-n", "-S", str(socket_path)], check=False, capture_output=True, timeout=5)
        ok = subprocess.run(["unmunge", "-S", str(socket_path)], check=False, input=cred.stdout,
                            capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return cred.returncode == 0 and ok.returncode == 0


def node_line() -> str:
    """This machine's node line from ``slurmd -C`` (NodeName must equal ``hostname -s``)."""
    first = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    return f"{first} NodeAddr=127.0.0.1 State=UNKNOWN"


@dataclass
class SlurmCluster:
    dir: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    munged_pid: int | None = None
    # munged runs as the munge user, who cannot enter pytest's private temp dirs: its files live under /run.
    munge_dir: Path = field(default_factory=lambda: Path(f"/run/eorch-test-munge-{os.getpid()}-{time.time_ns()}"))

    @property
    def munge_socket(self) -> Path:
        return self.munge_dir / "munge.socket"

    @property
    def conf(self) -> Path:
        return self.dir / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def client(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (sbatch, squeue, scancel, scontrol) against this cluster."""
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=check,
                              env={**os.environ, **self.env})

    def write_conf(self) -> None:
        d = self.dir
        for sub in ("etc", "state", "spool", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            f"ClusterName=eorchtest\nSlurmctldHost=localhost\nAuthInfo=socket={self.munge_socket}\n"
            f"SlurmctldPort={free_port()}\nSlurmdPort={free_port()}\nSlurmUser=root\nAuthType=auth/munge\n"
            f"StateSaveLocation={d / 'state'}\nSlurmdSpoolDir={d / 'spool'}\n"
            f"SlurmctldPidFile={d / 'slurmctld.pid'}\nSlurmdPidFile={d / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}\nSlurmdLogFile={d / 'log' / 'slurmd.log'}\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\n"
            f"JobCompType=jobcomp/filetxt\nJobCompLoc={d / 'log' / 'jobcomp.txt'}\n"
            "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            "MpiDefault=none\nMailProg=/bin/true\nReturnToService=2\nMinJobAge=300\nKillWait=5\n"
            f"{node_line()}\n"
            f"PartitionName=debug Nodes={socket.gethostname().split('.')[0]} Default=YES MaxTime=INFINITE State=UP\n"
        )

    def start_munged(self) -> None:
        d = self.munge_dir
        d.mkdir(mode=0o755)
        shutil.chown(d, "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", f"--socket={self.munge_socket}",
                        f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
                        f"--seed-file={d / 'munged.seed'}"], check=True, timeout=10)
        self.munged_pid = int((d / "munged.pid").read_text().strip())
        deadline = time.monotonic() + 10
        while not munge_works(self.munge_socket):
            if time.monotonic() > deadline:
                raise RuntimeError("munged did not answer within 10 s")
            time.sleep(0.05)

    def start(self, timeout: float = 30) -> None:
        self.start_munged()
        self.write_conf()
        for daemon in ("slurmctld", "slurmd"):
            with open(self.dir / "log" / f"{daemon}.out", "wb") as out:
                self.procs[daemon] = subprocess.Popen(
                    [daemon, "-D", "-f", str(self.conf)], stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited: {(self.dir / 'log' / f'{name}.out').read_text()[-2000:]}")
            states = self.client("sinfo", "-h", "-o", "%T", check=False).stdout.split()
            if "idle" in states:
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm node did not become idle within {timeout} s")

    def stop(self) -> None:
        """SIGTERM each daemon we started, by pid, and wait for it."""
        for name in ("slurmd", "slurmctld"):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        if self.munged_pid is not None:
            try:
                os.kill(self.munged_pid, 15)
            except ProcessLookupError:
                pass
            self.munged_pid = None
            time.sleep(0.2)  # munged removes its socket on the way out
        shutil.rmtree(self.munge_dir, ignore_errors=True)

    def job_state(self, job_id: str) -> str:
        """The job's state as squeue sees it ('' once it has left the controller's memory)."""
        out = self.client("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T", check=False)
        return out.stdout.strip()

    def in_queue(self, job_id: str) -> bool:
        """Still pending or running (plain squeue lists no finished job)."""
        return bool(self.client("squeue", "-h", "-j", job_id, "-o", "%i", check=False).stdout.strip())


def make_cluster(base: Path) -> SlurmCluster:
    cluster = SlurmCluster(base)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
