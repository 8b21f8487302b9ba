"""Hosts: the registry in the history, and a live session per host (transport + uploaded worker + agent).

A ``HostSession`` owns the one connection to a host. It uploads the worker bundle once per version,
resolves the remote root, and keeps a long-lived ``worker.cli agent`` channel so that liveness checks
cost no login shell. Errors come out as ``HostUnreachable`` / ``HostKeyRefused``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from orchestrator.config import Settings
from orchestrator.core import commands
from orchestrator.errors import HostUnreachable, RemoteOpFailed, StreamBroken, UsageError, WorkerFailed
from orchestrator.remote.bundle import worker_bundle
from orchestrator.remote.transport import Completed, LocalTransport, RemoteProcess, Transport
from orchestrator.store.models import Host
from worker.protocol import (
    ErrorReply,
    LaunchReply,
    LaunchSpec,
    ProtocolError,
    Reply,
    Request,
    StatusManyReport,
    decode_reply,
)

LOCAL_HOST = "local"
HOST_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def validate_host_name(name: str) -> str:
    if not HOST_NAME_RE.match(name):
        raise UsageError(f"invalid host name {name!r}: use letters, digits, '.', '_' or '-'")
    return name


def make_transport(host: Host, settings: Settings) -> Transport:
    if host.name == LOCAL_HOST:
        return LocalTransport()
    from orchestrator.remote.ssh import SshTarget, SshTransport

    target = SshTarget(
        destination=host.destination,
        port=host.port,
        ssh_config=tuple(settings.config.ssh.config),
        pinned_known_hosts=str(settings.pinned_known_hosts),
    )
    return SshTransport(host.name, target, connect_timeout=settings.config.ssh.connect_timeout_s)


@dataclass
class HostSession:
    name: str
    transport: Transport
    root_setting: str
    python: str = "python3"
    env: dict[str, str] = field(default_factory=dict)  # the host's --env, for every worker operation
    root: str = ""
    worker_dir: str = ""
    _agent: RemoteProcess | None = None
    _agent_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    @classmethod
    def for_host(cls, host: Host, settings: Settings, transport: Transport | None = None) -> HostSession:
        transport = transport or make_transport(host, settings)
        return cls(host.name, transport, host.root, host.python, dict(host.env or {}))

    def is_open(self) -> bool:
        return bool(self.worker_dir) and self.transport.is_connected()

    async def open(self) -> None:
        """Connect, make sure the worker is there, resolve the root, start the agent."""
        await self.transport.connect()
        bundle = worker_bundle()
        root = (await self._call_bootstrap("resolve_root", root=self.root_setting))["root"]
        dest = f"{root}/worker/{bundle.digest}"
        result = await self.transport.run(commands.unpack_worker(self.python, dest), input=bundle.tarball)
        if result.exit_status != 0:
            raise self._failed("unpacking itself", result)
        self.root, self.worker_dir = root, dest
        agent = self._with_env(commands.worker_agent(self.python, self.worker_dir))
        self._agent = await self.transport.start(agent)

    async def _call_bootstrap(self, op: str, **args: Any) -> dict[str, Any]:
        """A one-shot call that works before the worker is uploaded (resolve_root only needs stdlib)."""
        result = await self.transport.run(commands.resolve_root(self.python, args["root"]))
        if result.exit_status != 0:
            if result.exit_status == 127:
                raise HostUnreachable(self.name, f"{self.python} not found on the host")
            if b"Unknown option: -I" in result.stderr:  # Python 2: its last line is only "Try `python -h'"
                result = Completed(result.argv, result.exit_status, b"", b"it has no -I option: eorch needs "
                                   b"Python >= 3.8 on the host; choose one with `eorch host add --python`")
            raise self._failed("to start", result)
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    def _failed(self, doing: str, result: Completed) -> WorkerFailed:
        return WorkerFailed(self.name, self.python, doing, result.argv, result.exit_status,
                            result.stderr.decode(errors="replace"))

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Ask the agent. An error reply is that operation's ``RemoteOpFailed``; only a channel that broke or
        closed means the host is unreachable."""
        if self._agent is None:
            raise HostUnreachable(self.name, "not connected")
        async with self._agent_lock:
            request = Request(next(self._ids), op, args)
            try:
                await self._agent.write(request.to_line())
                reply = await self._read_reply(op, request.id)
            except (OSError, ConnectionError, StreamBroken) as err:
                raise HostUnreachable(self.name, f"the channel to eorch's worker agent broke: {err}") from err
        return self._result(op, reply)

    async def _read_reply(self, op: str, request_id: int) -> Reply:
        """The reply to request_id; replies to earlier requests (a call cancelled while it waited) are skipped."""
        assert self._agent is not None
        while True:
            line = await self._agent.readline()
            if not line:
                raise HostUnreachable(self.name, "the channel to eorch's worker agent closed")
            try:
                reply = decode_reply(line)
            except ProtocolError as err:
                raise RemoteOpFailed(self.name, op, f"eorch's worker answered {op!r} with something else than a "
                                                    f"reply ({err})", kind="crashed") from None
            if reply.id is None or reply.id >= request_id:
                return reply

    async def launch(self, spec: LaunchSpec) -> LaunchReply:
        """Start a run on the host (worker.ops.launch): its wrapper's identity, or its Slurm job id."""
        result = await self.call("launch", **spec.to_json())
        try:
            return LaunchReply.from_json(result)
        except ProtocolError as err:
            raise RemoteOpFailed(self.name, "launch", f"eorch's worker sent a bad launch reply: {err}",
                                 kind="crashed") from None

    async def status_many(self, run_dirs: list[str]) -> StatusManyReport:
        """The host's report on each run directory, in order (one whose files are corrupt has ``error`` set)."""
        result = await self.call("status_many", run_dirs=run_dirs)
        try:
            report = StatusManyReport.from_json(result)
        except ProtocolError as err:
            raise RemoteOpFailed(self.name, "status_many", f"eorch's worker sent a bad status report: {err}",
                                 kind="crashed") from None
        if len(report.runs) != len(run_dirs):  # the callers pair the reports with their runs, in order
            raise RemoteOpFailed(self.name, "status_many", f"eorch's worker reported on {len(report.runs)} run "
                                 f"directories, asked about {len(run_dirs)}", kind="crashed")
        return report

    async def call_once(self, op: str, **args: Any) -> dict[str, Any]:
        """One operation on its own channel (for slow ones like cancel, so the agent stays responsive)."""
        result = await self.transport.run(
            self._with_env(commands.worker_call(self.python, self.worker_dir, op, args)), timeout=None
        )
        try:
            reply = decode_reply(result.stdout.decode().strip().splitlines()[-1])
        except (ProtocolError, IndexError) as err:
            raise self._failed(f"in {op!r}", result) from err
        return self._result(op, reply)

    def _result(self, op: str, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, ErrorReply):
            raise RemoteOpFailed(self.name, op, reply.error, kind=reply.kind, where=reply.where)
        return reply.result

    def _with_env(self, argv: list[str]) -> list[str]:
        """argv run under the host's environment (``env K=V ... argv``; still one argv, quoted by shlex)."""
        if not self.env:
            return argv
        return ["env", *(f"{k}={v}" for k, v in sorted(self.env.items())), *argv]

    def run_dir(self, run_id: str) -> str:
        return f"{self.root}/runs/{run_id}"

    async def close(self) -> None:
        if self._agent is not None:
            await self._agent.stop()
            self._agent = None
        self.worker_dir = ""
        await self.transport.close()
