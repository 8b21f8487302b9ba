"""What the parser tells its caller: small, frozen, past-tense facts, each JSON-able via ``to_dict()``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from orchestrator.logparse.phases import Phase


@dataclass(frozen=True)
class RootCause:
    """The error that the other errors in a log point back to."""

    exception: str | None  # "AssertionError", "torch.OutOfMemoryError"; None for a bare error line
    message: str  # "" when the exception had no text
    process: str | None  # "Worker_TP3", "EngineCore", "APIServer", "main"
    traceback: str | None  # the full, prefix-stripped traceback (chained parts included)
    signature: str | None  # catalogue id
    line_no: int  # first line of the traceback, or the error line
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The contract's ``root_cause`` object."""
        return {
            "exception": self.exception,
            "message": self.message,
            "process": self.process,
            "traceback": self.traceback,
            "signature": self.signature,
        }

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # flat fields: what asdict() gives, without its deep copy

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RootCause:
        return cls(**data)


#: What the message of a traceback cut before its exception line says (``causetext.header_text``): alone, or in
#: brackets after the text its header line began with.
CUT_NOTE = "cut before its exception line"


def says_cut(message: str | None) -> bool:
    """Whether a root cause's message is (or ends with) ``header_text``'s note of a traceback cut short."""
    return not message or message.startswith(CUT_NOTE) or f"({CUT_NOTE}; " in message
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<fn>.+))?')


def last_frame(traceback: str) -> str | None:
    """Where a traceback's innermost frame is, with its source line: ``async_timeout.py:178, in _do_exit: raise
    asyncio.TimeoutError``; None when it shows no frame (rich's boxed frames are not read)."""
    lines = traceback.split("\n")
    last = next((i for i in range(len(lines) - 1, 0, -1) if _FRAME.match(lines[i])), None)
    if last is None:
        return None
    m = _FRAME.match(lines[last])
    assert m is not None
    where = f"{m.group('file').rsplit('/', 1)[-1]}:{m.group('line')}" + (f", in {m.group('fn')}" if m.group("fn") else "")
    source = lines[last + 1].strip() if last + 1 < len(lines) and lines[last + 1][:1].isspace() else ""
    return where + (f": {source}" if source else "")


def _raised_in(traceback: str, exception: str) -> str:
    """The traceback's text above ``exception``'s line: the frames it was raised in (the frames of an exception
    chained after it are the later one's; a traceback cut above its exception line shows none of its own)."""
    lines = traceback.split("\n")
    return "\n".join(lines[:next((i for i, line in enumerate(lines) if line.startswith(exception)), len(lines))])


def message_shown(cause: dict[str, Any]) -> str:
    """A root cause's message (``RootCause.to_dict()`` or a stored one) as shown, or what its absence means."""
    if cause.get("message"):
        return str(cause["message"])
    if cause.get("exception"):
        where = last_frame(_raised_in(str(cause.get("traceback") or ""), str(cause["exception"])))
        return "(raised without a message)" if where is None else f"(raised without a message, at {where})"
    if cause.get("traceback"):
        return f"(traceback {CUT_NOTE})"
    return "(empty message)"


def name_shown(cause: Mapping[str, Any]) -> str:
    """What a root cause is, in a word: its exception; with none, the known failure its line shows (its
    signature: ``nccl_error``, ``process_exited``), else ``error``."""
    return str(cause.get("exception") or cause.get("signature") or "error")


class _Event:
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in asdict(self).items():  # type: ignore[call-overload]
            out[key] = value.value if isinstance(value, Phase) else value
        return out


@dataclass(frozen=True)
class PhaseChanged(_Event):
    kind: ClassVar[str] = "phase_changed"
    phase: Phase
    line_no: int
    text: str


@dataclass(frozen=True)
class ShardsProgressed(_Event):
    kind: ClassVar[str] = "shards_progressed"
    done: int
    total: int
    rate_per_s: float | None
    eta_s: float | None
    line_no: int


@dataclass(frozen=True)
class ProgressReported(_Event):
    kind: ClassVar[str] = "progress_reported"
    done: int
    total: int
    unit: str
    line_no: int


@dataclass(frozen=True)
class ErrorSeen(_Event):
    kind: ClassVar[str] = "error_seen"
    line_no: int
    process: str
    text: str


@dataclass(frozen=True)
class TracebackCompleted(_Event):
    kind: ClassVar[str] = "traceback_completed"
    process: str
    exception: str | None
    message: str
    text: str
    line_no: int


@dataclass(frozen=True)
class SignatureMatched(_Event):
    kind: ClassVar[str] = "signature_matched"
    id: str
    severity: str
    hint: str
    line_no: int
    process: str


@dataclass(frozen=True)
class RootCauseFound(_Event):
    kind: ClassVar[str] = "root_cause_found"
    root_cause: RootCause
    line_no: int = field(default=0)


LogEvent = (
    PhaseChanged
    | ShardsProgressed
    | ProgressReported
    | ErrorSeen
    | TracebackCompleted
    | SignatureMatched
    | RootCauseFound
)
