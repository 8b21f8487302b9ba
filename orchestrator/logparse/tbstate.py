"""A traceback being read (``OpenTraceback``: its lines so far, its exception, where in it the reader is) and
a completed one (``Traceback``); ``tracebacks.TracebackAssembler`` moves them through a log's lines.  Ray's
``RayTaskError(X)`` cut before the worker's exception line names ``X`` when done.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

#: Bytes of text kept per traceback; exception lines are kept beyond it.
TRACEBACK_CAP = 64 * 1024
_RAY_WRAPPED_RE = re.compile(r"RayTaskError\(([\w.]+)\)$")
FRAMES, AFTER_EXC, CHAINED, DEBUG_MSG, PANIC = "frames", "after_exc", "chain", "debug_msg", "panic"


#: The levels a script relays its child's output at (a traceback logged at them is one lived with).
_RELAY_LEVELS = frozenset({"INFO", "DEBUG", "WARNING"})


@dataclass(frozen=True)
class Traceback:
    """A completed traceback."""

    key: str  # the writer, as ParsedLine.key
    process: str
    exception: str | None
    message: str
    text: str
    line_no: int  # the "Traceback (most recent call last):" line
    end_line: int
    level: str | None  # log level of the record it was in; None for raw stderr
    exception_lines: tuple[str, ...]  # every exception line, first (the cause) first
    truncated: bool
    joined: bool = False  # an exception line was read whole only here (wrapped by rich; a panic's first line)


@dataclass
class OpenTraceback:
    """A traceback being read: its lines so far and where in it the reader is."""

    key: str
    process: str
    record: str | None
    level: str | None
    start_line: int
    last_line: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    truncated: bool = False
    exception: str | None = None
    message: str | None = None
    exception_lines: list[str] = field(default_factory=list)
    state: str = FRAMES
    blanks: int = 0
    crlf: bool = True  # the header line ended in "\r": the record ends at the first bare "\n"
    head: str | None = None  # prefix + record header of the header line: frame lines start with it too
    continued: int = 0  # continuation lines of a raw exception message
    code_next: bool = False  # the last line was a frame line at column 0: the next may be its source line
    nested: bool = False  # a traceback printed inside the last exception's message: its exception says what failed
    depth: int = 0  # brackets left open by the source lines shown at column 0 since the frame line
    ipython: bool = False  # IPython's report: its frame and gutter lines are frames, whatever their indent
    remote: bool = False  # opened at Ray's ``RayTaskError(X): ...``: the remote exception line, if any, names it
    indent: int = 0  # a raw header's indentation (pip's "[18 lines of output]"): every line of the block has it
    chained: bool = False  # a chain marker came since the last exception line
    group: bool = False  # an exception group's report: its lines behind ``|`` gutters, its parts between rules
    rich: int = 0  # rich's boxed report: the box's width (its exception's message is wrapped to it)
    interleaved: int = 0  # log records of the same writer read between its lines (a raw traceback's)
    joined: bool = False  # ``Traceback.joined``
    framed: bool = False  # its header cut off, under a frame line its writer's record holds (``relayed``)
    printed: int = 0  # the program's own lines read between a frame line and its source line (``frames_step``)
    edge: int = 0  # the window a terminal cut its exception line at (``cut_at_edge``), -1 not known; 0: none

    def add(self, text: str, line_no: int, important: bool = False) -> None:
        self.last_line = line_no
        if self.size + len(text) + 1 > TRACEBACK_CAP and not important:
            self.truncated = True
            return
        self.lines.append(text)
        self.size += len(text) + 1

    def done(self) -> Traceback:
        exception, message = self.exception, self.message or ""
        inner = _RAY_WRAPPED_RE.search(exception) if self.remote and exception is not None else None
        if inner is not None and self.exception_lines:
            # Ray's wrapper line and no remote exception line after it (the paste was cut): the wrapper says
            # what the worker raised (``RayTaskError(ValueError)``), and where; its line is the message.
            exception, message = inner.group(1), self.exception_lines[-1]
        if not message and exception is not None:
            message = _restated(exception, self.exception_lines[1:])
        if exception is not None and exception.endswith("CalledProcessError") and len(
                set(self.exception_lines)) == 2:  # (a third would be a traceback the wrapper's message prints)
            exception, message = _wrapped_run(exception, message, self.exception_lines[1])
        return Traceback(
            key=self.key,
            process=self.process,
            exception=exception,
            message=message,
            text="\n".join(self.lines),
            line_no=self.start_line,
            end_line=self.last_line,
            level=None if self.relayed() else self.level,
            exception_lines=tuple(self.exception_lines),
            truncated=self.truncated,
            joined=self.joined,
        )

    def relayed(self) -> bool:
        """Whether a script's logger wrote each of its lines as a record of its own (``ts - __main__ - INFO -
        Traceback ...``, ``INFO:root:  File ...``): a child's stderr relayed line by line at the script's level,
        not a traceback logged at that level (Python's logging heads only a record's first line; vLLM's, which
        heads every line, ends its header with ``[file.py:N]``)."""
        return (self.record is not None and self.level in _RELAY_LEVELS and not self.record.endswith("]")
                and (len(self.lines) > 1 or self.framed))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpenTraceback:
        return cls(**data)


def _restated(exception: str, later: list[str]) -> str:
    """The words a later exception of a chain gives a first one raised bare, of the same class (``raise
    TimeoutError``, then ``raise TimeoutError(f"RPC call to {method} timed out.") from e``), else ""."""
    name = exception.rsplit(".", 1)[-1]
    for line in later:
        exc, _, rest = line.partition(": ")
        if exc.strip().rsplit(".", 1)[-1] == name and rest.strip():
            return rest.strip()
    return ""


def _wrapped_run(exception: str, message: str, wrapper: str) -> tuple[str, str]:
    """A command that failed (``CalledProcessError``: its message is only the command line) re-raised by the
    code that ran it, with what the command printed (flashinfer's ``RuntimeError: Ninja build failed. Ninja
    output:``, then ``ld: cannot find -lcuda``): the wrapper says what failed (its first line is kept)."""
    exc, _, rest = wrapper.partition(": ")
    exc = exc.strip()
    if not rest.strip() or not exc or " " in exc:
        return exception, message
    return exc, rest.strip()


def remote_line(tb: OpenTraceback, msg: str, line_no: int) -> None:
    """Ray's ``RayTaskError(X): ray::f() ...`` line: the remote worker's frames follow, then its exception line,
    which names the error; until it comes, the wrapper's line does."""
    msg = msg.rstrip()
    exc, _, rest = msg.partition(": ")
    tb.exception, tb.message, tb.remote = exc, rest.strip(), True
    tb.exception_lines.append(msg[:4096])
    tb.add(msg, line_no, important=True)
