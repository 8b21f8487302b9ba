"""A real OpenSSH sshd on 127.0.0.1 for the tests: own host key, authorized client key, private known_hosts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@dataclass
class Sshd:
    dir: Path
    port: int
    host_key: Path
    client_key: Path
    known_hosts: Path
    extra_config: str = ""  # more sshd_config lines (e.g. a ForceCommand that changes the login directory)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def user(self) -> str:
        import getpass

        return getpass.getuser()

    def ssh_config(self, alias: str = "testbox", known_hosts: Path | None = None) -> str:
        return (
            f"Host {alias}\n"
            f"  HostName 127.0.0.1\n"
            f"  Port {self.port}\n"
            f"  User {self.user}\n"
            f"  IdentityFile {self.client_key}\n"
            f"  UserKnownHostsFile {known_hosts or self.known_hosts}\n"
        )

    def start(self) -> None:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        config = self.dir / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}\nPidFile {self.dir / 'sshd.pid'}\n"
            "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nMaxSessions 100\nMaxStartups 100:30:200\n"
            "Subsystem sftp internal-sftp\n" + self.extra_config
        )
        with open(self.dir / "sshd.log", "wb") as log:  # sshd keeps its own copy of the descriptor
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.dir / 'sshd.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("sshd did not start listening")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)

    def kill_connections(self) -> None:
        """Drop every client connection (the per-connection sshd children), keeping the listener."""
        assert self.proc is not None
        for child in _children(self.proc.pid):
            try:
                os.kill(child, 15)
            except ProcessLookupError:
                pass


def _children(ppid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == ppid:
                out.append(int(name))
    return out


def make_sshd(base: Path, extra_config: str = "") -> Sshd:
    base.mkdir(parents=True, exist_ok=True)
    host_key, client_key = base / "hostkey_ed25519", base / "client_key"
    keygen(host_key)
    keygen(client_key)
    shutil.copy(base / "client_key.pub", base / "authorized_keys")
    port = free_port()
    known_hosts = base / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {' '.join(Path(str(host_key) + '.pub').read_text().split()[:2])}\n")
    sshd = Sshd(base, port, host_key, client_key, known_hosts, extra_config)
    sshd.start()
    return sshd
