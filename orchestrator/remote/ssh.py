"""The SSH transport: one persistent asyncssh connection per host, host key always verified.

asyncssh and OS errors are translated into ``HostUnreachable`` / ``HostKeyRefused`` / ``StreamBroken`` here and
nowhere else.
Imported only when a non-local host is used (asyncssh is slow to import).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# cryptography >= 51 warns that DSA is deprecated when asyncssh merely imports its DSA support (eorch offers no
# DSA keys of its own): without this every command would print a dozen lines of warnings on stderr.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

import asyncssh  # (after the filter above)

from orchestrator.core import commands
from orchestrator.core.destination import parse_destination
from orchestrator.errors import HostKeyRefused, HostUnreachable, StreamBroken
from orchestrator.remote.transport import Completed, RemoteProcess


@dataclass(frozen=True)
class SshTarget:
    """Where and how to connect; ``destination`` is anything ``ssh`` accepts (``[user@]host`` or an alias)."""

    destination: str
    port: int | None = None
    ssh_config: tuple[str, ...] = ()  # extra ssh_config files; ~/.ssh/config is always read when present
    pinned_known_hosts: str | None = None  # eorch's own known_hosts (keys pinned with --accept-new-host-key)


def _config_files(target: SshTarget) -> list[str]:
    files = [str(Path(f).expanduser()) for f in target.ssh_config]
    default = Path("~/.ssh/config").expanduser()
    if not files and default.exists():
        files.append(str(default))
    return files


def resolve_options(target: SshTarget) -> asyncssh.SSHClientConnectionOptions:
    """Connection options from the user's ssh config for this destination (HostName, Port, User, ...).

    An explicit user or port wins over the config, as with ``ssh -p PORT user@host``.
    """
    dest = parse_destination(target.destination, target.port)
    kwargs: dict[str, object] = {"config": _config_files(target) or None}
    if dest.user:
        kwargs["username"] = dest.user
    if dest.port:
        kwargs["port"] = dest.port
    return asyncssh.SSHClientConnectionOptions(host=dest.host, **kwargs)


def known_hosts_files(options: asyncssh.SSHClientConnectionOptions, target: SshTarget) -> list[str]:
    """The user's known_hosts files (from ssh config or the default) plus eorch's pinned keys."""
    configured = options.known_hosts if isinstance(options.known_hosts, list) else None
    files = [str(Path(f).expanduser()) for f in (configured or ["~/.ssh/known_hosts"])]
    if target.pinned_known_hosts:
        files.append(target.pinned_known_hosts)
    return [f for f in files if os.path.isfile(f)]


def load_known_hosts(files: list[str]) -> asyncssh.SSHKnownHosts:
    """One known_hosts object from several files; empty when none exist, which refuses every key."""
    text = "".join(Path(f).read_text() + "\n" for f in files)
    return asyncssh.import_known_hosts(text)


def known_hosts_entry_host(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class _Client(asyncssh.SSHClient):
    def __init__(self, lost: asyncio.Event) -> None:
        self._lost = lost

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost.set()


# asyncssh buffers a channel's incoming data in two places: the stream (paused at one window's worth) and,
# while the stream is paused, the channel itself. Resuming the stream delivers the channel's backlog and
# re-opens the whole window for each delivery, so a reader taking less than a window per read lets the
# channel's backlog grow without bound while the consumer is slower than the link (1.1 GB for a 900 MB
# log). Reading a whole window at a time drains as much as each resume lets in: memory stays ~3 windows.
STREAM_WINDOW = 2 * 1024 * 1024  # asyncssh's default channel window


class _SshProcess:
    """A remote process's stdout as a stream: b"" is its end of file only; a channel that fails (reset, the
    connection lost) raises StreamBroken, so a reader never takes a broken link for a finished stream."""

    def __init__(self, host: str, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        self._host = host
        self._proc = proc
        self._buf = b""  # what the last window-sized read brought and the caller has not taken yet
        self._pos = 0

    async def read(self, n: int) -> bytes:
        if self._pos >= len(self._buf):
            try:
                self._buf, self._pos = await self._proc.stdout.read(STREAM_WINDOW), 0
            except (asyncssh.Error, OSError) as err:
                raise StreamBroken(self._host, f"the channel broke while reading: {_describe(err)}") from err
        chunk = self._buf[self._pos : self._pos + n]
        self._pos += len(chunk)
        if self._pos >= len(self._buf):
            self._buf, self._pos = b"", 0
        return chunk

    async def readline(self) -> bytes:
        head = b""
        if self._pos < len(self._buf):
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                line, self._pos = self._buf[self._pos : end + 1], end + 1
                return line
            head, self._buf, self._pos = self._buf[self._pos :], b"", 0
        try:
            return head + await self._proc.stdout.readline()
        except (asyncssh.Error, OSError) as err:
            raise StreamBroken(self._host, f"the channel broke while reading: {_describe(err)}") from err

    async def write(self, data: bytes) -> None:
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def stop(self) -> None:
        self._proc.close()
        try:
            await asyncio.wait_for(self._proc.wait_closed(), 5)
        except (TimeoutError, asyncssh.Error, OSError):
            pass


class SshTransport:
    """One persistent asyncssh connection to a host, host key always verified."""

    def __init__(self, name: str, target: SshTarget, *, connect_timeout: float = 15) -> None:
        self.name = name
        self.target = target
        self.connect_timeout = connect_timeout
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lost = asyncio.Event()
        self._lock = asyncio.Lock()

    def is_connected(self) -> bool:
        return self._conn is not None and not self._lost.is_set()

    async def connect(self) -> None:
        async with self._lock:
            if self.is_connected():
                return
            self._lost = asyncio.Event()
            lost = self._lost
            try:
                options = resolve_options(self.target)
                known = load_known_hosts(known_hosts_files(options, self.target))
                self._conn, _ = await asyncio.wait_for(
                    asyncssh.create_connection(
                        lambda: _Client(lost),
                        # host and port again: create_connection re-resolves the options for its host
                        # argument, and its default ('') would drop what the options hold.
                        options.host,
                        options.port,
                        options=options,
                        known_hosts=known,
                        keepalive_interval=10,
                        keepalive_count_max=3,
                    ),
                    self.connect_timeout,
                )
            except asyncssh.HostKeyNotVerifiable as err:
                raise HostKeyRefused(self.name, self._key_refusal(options)) from err
            except asyncssh.PermissionDenied as err:
                raise HostUnreachable(self.name, f"authentication failed ({err.reason}); check your key/agent") from err
            except (TimeoutError, asyncssh.Error, OSError, ValueError) as err:
                raise HostUnreachable(self.name, _describe(err)) from err

    def _key_refusal(self, options: asyncssh.SSHClientConnectionOptions) -> str:
        host, port = options.host, options.port or 22
        entry = known_hosts_entry_host(host, port)
        files = known_hosts_files(options, self.target)
        known = load_known_hosts(files).match(host, "", port if port != 22 else None)[0]
        if known:
            return (
                f"the host key of {entry} does not match the one in known_hosts — it CHANGED. "
                f"Do not connect until you know why; if the change is legitimate, remove the old entry "
                f"(ssh-keygen -R '{entry}') and verify the new fingerprint out of band."
            )
        return (
            f"the host key of {entry} is not in known_hosts. Verify its fingerprint out of band "
            f"(on the host: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then either run "
            f"`ssh -p {port} {parse_destination(self.target.destination).login}` once and accept it, "
            f"or re-run with --accept-new-host-key."
        )

    async def fetch_host_key(self) -> tuple[str, int, asyncssh.SSHKey]:
        """The server's host key, unauthenticated (for explicit pinning only)."""
        options = resolve_options(self.target)
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(options.host, options.port or 22), self.connect_timeout
            )
        except (TimeoutError, asyncssh.Error, OSError) as err:
            raise HostUnreachable(self.name, _describe(err)) from err
        if key is None:
            raise HostUnreachable(self.name, "the server offered no host key")
        return options.host, options.port or 22, key

    def _require(self) -> asyncssh.SSHClientConnection:
        if not self.is_connected() or self._conn is None:
            raise HostUnreachable(self.name, "not connected")
        return self._conn

    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 60) -> Completed:
        conn = self._require()
        try:
            result = await asyncio.wait_for(
                conn.run(commands.shell(argv), input=input, encoding=None, check=False), timeout
            )
        except (asyncssh.Error, OSError) as err:
            self._lost.set()
            raise HostUnreachable(self.name, _describe(err)) from err
        out = result.stdout if isinstance(result.stdout, bytes) else b""
        err_out = result.stderr if isinstance(result.stderr, bytes) else b""
        return Completed(tuple(argv), result.exit_status, out, err_out)

    async def start(self, argv: Sequence[str]) -> RemoteProcess:
        conn = self._require()
        try:
            proc = await conn.create_process(commands.shell(argv), encoding=None, stderr=asyncssh.DEVNULL,
                                             window=STREAM_WINDOW)
        except (asyncssh.Error, OSError) as err:
            raise HostUnreachable(self.name, _describe(err)) from err
        return _SshProcess(self.name, proc)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            try:
                await asyncio.wait_for(self._conn.wait_closed(), 5)
            except (TimeoutError, asyncssh.Error, OSError):
                pass
        self._conn = None
        self._lost.set()


def _describe(err: BaseException) -> str:
    if isinstance(err, asyncio.TimeoutError):
        return "timed out connecting"
    if isinstance(err, OSError):
        return err.strerror or str(err)
    reason = getattr(err, "reason", None)
    return str(reason or err) or type(err).__name__
