"""The one exception tree of eorch.

Every error a user can cause or meet is an ``EorchError``; the CLI prints ``str(err)`` as one line and exits
with ``err.exit_code``; the TUI shows it in a modal.  Library errors (asyncssh, OSError, SQLAlchemy) are
translated into this tree at the edge that calls the library, never deeper.

    EorchError
    ├── UsageError                  bad input from the user (exit 2)
    │   ├── SpecError               a job spec that does not validate
    │   └── NotFound                unknown host / run / file
    ├── ConfigError                 config.toml unreadable or invalid
    ├── StoreError                  the SQLite history cannot be opened or migrated
    │   └── HistoryReadOnly         the history cannot be written
    ├── HostError                   anything about reaching a host
    │   ├── HostUnreachable         connect/auth/network failure (the run is not failed for it)
    │   ├── HostKeyRefused          unknown or changed host key; says how to verify and add it
    │   └── StreamBroken            an open channel (a log stream, the agent's) failed: not its end of file
    ├── RemoteOpFailed              the worker answered an operation with an error; the host is reachable
    ├── RemoteCommandFailed         a remote command exited non-zero (argv, exit_status, stderr)
    │   └── WorkerFailed            eorch's own worker on the host failed (named as such, with its python)
    ├── ChannelFailed               one delivery attempt of an alert channel failed (retried, then recorded)
    ├── PatchError                  a patch set cannot be checked/applied/reverted; host unchanged
    ├── PreflightRefused            a launch's preflight failed a check; nothing started (carries the report)
    └── MonitorBusy                 another monitor holds the follow lock

Not in the tree, on purpose: ``logparse.signatures.CatalogueError`` (a ``ValueError``). ``orchestrator.logparse``
imports nothing but the stdlib and itself (tests/unit/logparse/test_purity.py), and the error is not one a user
can cause: it says the signature catalogue shipped with eorch is malformed, a bug that the catalogue's tests catch
before release. ``worker.ops.OpError`` is the worker's own (stdlib-only, on the host): the controller receives it
as an error reply and raises ``RemoteOpFailed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class EorchError(Exception):
    """Base of every error eorch reports to a user."""

    exit_code: int = 1


class UsageError(EorchError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class SpecError(UsageError):
    """A job spec failed validation; the message names the key."""


class NotFound(UsageError):
    """An unknown host, run or file."""


class ConfigError(EorchError):
    """config.toml cannot be read or is invalid."""


class StoreError(EorchError):
    """The local history database cannot be opened or migrated."""


class HistoryReadOnly(StoreError):
    """The history database cannot be written: nothing a monitor does can be recorded, so it stops."""


class HostError(EorchError):
    """Something went wrong reaching a host."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"host {host!r}: {message}")
        self.host = host


class HostUnreachable(HostError):
    """Connecting or authenticating failed; runs on the host keep their status."""


class HostKeyRefused(HostError):
    """The host key is unknown or changed; nothing was sent to the host."""


class StreamBroken(HostError):
    """A channel that was open failed while being read (reset, the connection dropped): unlike its end of
    file, nothing says the remote side finished. A follower restarts its stream; the agent's session reopens."""


class RemoteOpFailed(EorchError):
    """The worker answered an operation with an error: ``refused`` (bad path, missing command: the message
    says why) or ``crashed`` (an unexpected error on the host, ``where`` names the worker's line). The host
    and its agent are fine; only this operation failed."""

    def __init__(self, host: str, op: str, message: str, *, kind: str = "refused", where: str = "") -> None:
        super().__init__(f"{host}: {message}" + (f" (in {op!r}, at {where})" if where else ""))
        self.host, self.op, self.kind, self.where = host, op, kind, where
        self.reason = message

    @property
    def crashed(self) -> bool:
        return self.kind == "crashed"


class RemoteCommandFailed(EorchError):
    """A remote command exited non-zero."""

    def __init__(self, argv: Sequence[str], exit_status: int | None, stderr: str) -> None:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no stderr"
        super().__init__(f"remote command {argv[0] if argv else '?'!r} exited {exit_status}: {last}")
        self.argv = list(argv)
        self.exit_status = exit_status
        self.stderr = stderr


class WorkerFailed(RemoteCommandFailed):
    """eorch's worker (or its bootstrap) exited non-zero on the host: the message names it and its python."""

    def __init__(self, host: str, python: str, doing: str, argv: Sequence[str], exit_status: int | None,
                 stderr: str) -> None:
        super().__init__(argv, exit_status, stderr)
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
        EorchError.__init__(self, f"host {host!r}: eorch's worker ({python} on the host) failed {doing}, "
                                  f"exit {exit_status}: {last}")
        self.host = host


class PatchError(EorchError):
    """A patch set could not be checked, applied or reverted; the host files are unchanged."""


class PreflightRefused(EorchError):
    """A preflight check failed, so the launch was refused before anything started on the host."""

    def __init__(self, host: str, report: dict[str, Any]) -> None:
        failed = [c["id"] for c in report["checks"] if c["status"] == "fail"]
        super().__init__(f"launch refused on {host}: preflight failed {len(failed)} check(s) ({', '.join(failed)}); "
                         "fix them, or launch anyway with --force (or skip the checks with --no-preflight)")
        self.report = report
        self.first_failure = next((f"{c['id']}: {c['evidence']}" for c in report["checks"]
                                   if c["status"] == "fail"), "")


class ChannelFailed(EorchError):
    """One delivery attempt of an alert channel failed; the message is safe to log (no URL, no secret).
    The alert engine retries it and records the outcome; it never reaches the user as an error."""


class MonitorBusy(EorchError):
    """Another monitor process is following runs; this one only reads."""
