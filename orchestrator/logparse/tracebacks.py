"""Reassemble Python tracebacks, per writing process, from interleaved log lines.

Two shapes arrive:

* inside a vLLM log record (``logger.exception``): every line carries the same ``LEVEL ts [file:line]``
  header and all but the last end in ``\\r\\n``, so the record (and the traceback) ends at the first line
  that ends in a bare ``\\n``;
* raw stderr (Python's excepthook, ``traceback.print_exc()``, a child's ``Process EngineCore:`` block): the
  traceback ends after the exception line unless a chain marker (``During handling of the above
  exception...``) follows;
* a debugger's pop-up and IPython's report (``tbforms``).

The exception of a chained traceback is the *first* one: the others happened while handling it; except one
chained after it that tells the same trouble at more length (``tbtext.translates``: ``except KeyError: raise
ValueError("model type `x` ... not recognized")``).  What a line is (header, frame, exception line) is
``tbtext``'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from orchestrator.logparse.lines import Ending
from orchestrator.logparse.prefixes import ParsedLine, head_before_record
from orchestrator.logparse.tbforms import (
    ipython_exception,
    is_ipython_header,
    is_remote_banner,
    is_rule,
    quoted_python_error,
)
from orchestrator.logparse.tbframes import frames_step
from orchestrator.logparse.tbmessage import (
    CONTINUATION_CAP,
    awaits_edge,
    awaits_rest,
    continues,
    cut_at_edge,
    exception_line,
    panic_step,
    rich_step,
    told_on,
    wrapped_rest,
)
from orchestrator.logparse.tbstate import (
    AFTER_EXC,
    CHAINED,
    DEBUG_MSG,
    FRAMES,
    PANIC,
    TRACEBACK_CAP,
    OpenTraceback,
    Traceback,
    remote_line,
)
from orchestrator.logparse.tbtext import (
    CHAIN_MARKERS,
    FRAME_RE,
    brackets,
    exception_like,
    is_header,
    is_rich_header,
    never_exception_line,
)

#: A traceback still open after this many lines without a line of its own is closed.
STALE_LINES = 2000
#: Log records a raw traceback may be interleaved with before they are taken to have ended it.
_INTERLEAVED = 64

#: A line of an exception group's report: a rule between its parts, or a line behind its gutter.
_GROUP_LINE = re.compile(r"^ *(?:\+-[-+]*(?: (?:\d+|\.\.\.) -+| [^-].*-+)?|\| ?(?P<rest>.*))$")


class TracebackAssembler:
    """Open tracebacks keyed by writer; ``feed`` says whether a line belongs to one."""

    def __init__(self) -> None:
        self._open: dict[str, OpenTraceback] = {}

    def any_open(self) -> bool:
        return bool(self._open)

    def is_open(self, key: str) -> bool:
        return key in self._open

    def start(self, line: ParsedLine, line_no: int, process: str, ending: Ending = Ending.CR,
              head: str | None = None) -> list[Traceback]:
        """Open a traceback at its header line; closes one the same writer left open.  ``head`` is the raw
        text before the message (prefix and record header), when it is plain ASCII-safe text."""
        closed = self._close(line.key)
        named = ipython_exception(line.message.rstrip())
        message = line.message.rstrip()
        indent = len(message) - len(message.lstrip(" ")) if line.lines_record is None else 0
        group = message.lstrip(" ").startswith("+ Exception Group")
        if group:  # (its lines keep the header's indentation only behind their gutters)
            message, indent = message.lstrip(" ")[2:], 0
        if head is not None and line.record is not None and line.lines_record is None:
            head = head_before_record(head)  # (the lines after a record that marks only its first start without it)
        tb = OpenTraceback(line.key, process, line.lines_record, line.level, line_no, line_no, crlf=ending is Ending.CR,
                   head=None if indent else head, exception=named, ipython=named is not None, indent=indent,
                   group=group, rich=len(message) if is_rich_header(message) else 0)
        tb.add(message[indent:], line_no, important=True)
        self._open[line.key] = tb
        return closed

    def start_debugger(self, line: ParsedLine, line_no: int, exception: str) -> list[Traceback]:
        """Open a traceback at a debugger's ``Exception has occurred: X`` line; its message comes next."""
        closed = self._close(line.key)
        tb = OpenTraceback(line.key, line.process, line.lines_record, line.level, line_no, line_no, crlf=False,
                   exception=exception, state=DEBUG_MSG)
        tb.add(line.message.rstrip(), line_no, important=True)
        self._open[line.key] = tb
        return closed

    def start_panic(self, line: ParsedLine, line_no: int, ending: Ending) -> list[Traceback]:
        """Open a Rust panic at its ``thread '...' panicked at ...`` line (``tbforms``): its line is its
        message (it names no exception), with the message line after it when the location ends the line."""
        closed = self._close(line.key)
        text = line.message.rstrip()
        tb = OpenTraceback(line.key, line.process, line.lines_record, line.level, line_no, line_no,
                           crlf=ending is Ending.CR, message=text, state=PANIC, joined=True,
                           exception=quoted_python_error(text))
        tb.exception_lines.append(text[:4096])
        tb.add(text, line_no, important=True)
        self._open[line.key] = tb
        return closed

    def start_remote(self, line: ParsedLine, line_no: int, ending: Ending) -> list[Traceback]:
        """Open a traceback at Ray's ``ray.exceptions.RayTaskError(ValueError): ray::Worker.f() (pid=N, ip=...)``
        standing alone (a paste cut above it): the remote worker's frames follow, then its exception line,
        which names the error; until it comes, the wrapper's line does."""
        closed = self._close(line.key)
        tb = OpenTraceback(line.key, line.process, line.lines_record, line.level, line_no, line_no, crlf=ending is Ending.CR)
        remote_line(tb, line.message, line_no)
        self._open[line.key] = tb
        return closed

    def start_headless(self, line: ParsedLine, line_no: int, ending: Ending, above: str | None = None,
                       framed: bool = False, frames: Sequence[str] = ()) -> list[Traceback]:
        """Open a traceback at an exception line whose header and first frames were cut off; ``frames``: the lines
        of it its writer logged just above as records of their own (``Evidence.absorb_frames``); ``above``: the
        innermost frame's statement just before it (``assert ...``, its indentation lost), when known."""
        closed = self._close(line.key)
        tb = OpenTraceback(line.key, line.process, line.lines_record, line.level, line_no, line_no, crlf=ending is Ending.CR)
        tb.framed = framed
        for i, text in enumerate(frames):
            tb.add(text, line_no - len(frames) + i)
        if above is not None and all(f.strip() != above for f in frames):
            tb.add(above, line_no - 1)
        exception_line(tb, line.message.rstrip(), line_no)
        self._open[line.key] = tb
        if tb.record is not None and ending is Ending.EOF:
            closed += self._close(line.key)
        return closed

    def frame_head(self, key: str, ending: Ending) -> bytes | None:
        """The bytes a frame line of ``key``'s open traceback starts with, when such a line may be taken
        without parsing (``add_frame``): the traceback is reading frames and the line cannot end it."""
        tb = self._open.get(key)
        if tb is None or tb.state != FRAMES or tb.head is None or tb.group:
            return None  # (an exception group's lines are all indented behind its gutter, its exception lines too)
        if tb.record is not None and ending is not Ending.CR and (tb.crlf or ending is Ending.EOF):
            return None
        return tb.head.encode()

    def key_by_head(self, raw: bytes) -> str | None:
        """The writer of an open traceback whose head (with ANSI codes: a coloured prefix) starts ``raw``,
        followed by an indented text without ANSI codes or NULs: ``raw`` is that writer's line, as parsing it
        would say."""
        for key, tb in self._open.items():
            if tb.head is not None and "\x1b" in tb.head:
                head = tb.head.encode()
                rest = raw[len(head):]
                if raw.startswith(head) and rest[:1] in (b" ", b"\t") and b"\x1b" not in rest and b"\x00" not in rest:
                    return key
        return None

    def after_head(self, raw: bytes) -> bool:
        """Whether ``raw`` is an open traceback's head with ANSI codes and more after it (so it is not a
        prefix alone, whose writer the next line would inherit)."""
        for tb in self._open.values():
            if tb.head is not None and "\x1b" in tb.head:
                head = tb.head.encode()
                if raw.startswith(head) and raw[len(head):].strip():
                    return True
        return False

    def add_frame(self, key: str, msg: str, line_no: int) -> None:
        """A frame line (indented, after ``frame_head``) of ``key``'s open traceback: what ``feed`` does."""
        self._open[key].add(msg, line_no)

    def add_frames(self, key: str, msgs: Sequence[str], first_line: int) -> None:
        """``add_frame`` for a run of frame lines numbered from ``first_line``."""
        tb = self._open[key]
        whole = sum(map(len, msgs)) + len(msgs)
        if tb.size + whole <= TRACEBACK_CAP:
            tb.lines.extend(msgs)
            tb.size += whole
        else:
            lines, size = tb.lines, tb.size
            for msg in msgs:
                size += len(msg) + 1
                if size > TRACEBACK_CAP:
                    size -= len(msg) + 1
                    tb.truncated = True
                else:
                    lines.append(msg)
            tb.size = size
        tb.last_line = first_line + len(msgs) - 1

    def feed(self, line: ParsedLine, line_no: int, ending: Ending) -> tuple[bool, list[Traceback]]:
        """(consumed, completed): ``consumed`` is False when the line is not part of an open traceback."""
        key = line.key
        tb = self._open.get(key)
        if tb is None:
            wrapped = self.wrap_awaited(line_no) if wrapped_rest(line) else (
                self.edge_awaited(line_no, line.message) if line.record is None and line.pid is None else None)
            if wrapped is None:
                return False, []
            key, tb = wrapped, self._open[wrapped]
        msg = line.message.rstrip()
        if tb.record is not None and line.record is None and len(tb.lines) == 1 and msg.lstrip().startswith('File "'):
            # A logger that gives only a record's first line its header (logging's own formatter): the
            # traceback the record opened goes on in raw lines.
            tb.record = tb.head = None
        if line.record != tb.record and key == line.key and not (line.record is None and told_on(tb, msg)):
            if tb.record is None and line.record is not None and tb.state == FRAMES and tb.interleaved < _INTERLEAVED:
                # Another thread's log record between the lines of a raw traceback (Python's excepthook writes
                # its lines one by one while the process goes on logging): not its end.
                tb.interleaved += 1
                return False, []
            return False, self._close(key)
        if tb.crlf and tb.state == FRAMES and ending is not Ending.CR and never_exception_line(msg):
            return False, self._close(key)  # a record's last line no exception's (overwritten): cut before it
        # (a row of no writer's taken for a record's traceback: the rest of a line a terminal cut, ``edge_awaited``)
        consumed = self._step(tb, msg, line_no, row=tb.record is not None and line.record is None)
        if not consumed:
            return False, self._close(key)
        if tb.record is not None and ending is not Ending.CR and (tb.crlf or ending is Ending.EOF):
            return True, self._close(key)
        return True, []

    def wrap_awaited(self, line_no: int) -> str | None:
        """The writer of a log record's exception line, on the line before ``line_no``, whose message a paste
        may have wrapped onto that line (``awaits_rest``)."""
        return next((key for key, tb in self._open.items() if awaits_rest(tb, line_no)), None)

    def edge_awaited(self, line_no: int, msg: str) -> str | None:
        """The writer of a log record's exception line, on the line before ``line_no``, that a terminal cut at its
        edge, when ``msg`` (a row of no writer's) is the rest of it (``cut_at_edge``)."""
        return next((key for key, tb in self._open.items() if awaits_edge(tb, line_no) and cut_at_edge(tb, msg) != 0),
                    None)

    def edge_awaiting(self, line_no: int) -> bool:
        """Whether a log record's exception line just before ``line_no`` may go on there (``awaits_edge``)."""
        return any(awaits_edge(tb, line_no) for tb in self._open.values())

    def _step(self, tb: OpenTraceback, msg: str, line_no: int, row: bool = False) -> bool:
        if tb.group and (g := _GROUP_LINE.match(msg)) is not None:
            # Python's report of an exception group: each line of it behind a gutter (``  | ``), the group's
            # parts (a traceback each) between rules (``+-+---- 1 ----``): read without them.
            if g.group("rest") is None:  # a rule: a part's traceback follows, as after a chain marker
                tb.state, tb.blanks, tb.chained = CHAINED, 0, True
                tb.add(msg, line_no)
                return True
            msg = g.group("rest")
        if tb.state == PANIC:
            return panic_step(tb, msg, line_no)
        if tb.rich and rich_step(tb, msg, line_no):
            return True
        if tb.indent:
            # A traceback printed indented inside another tool's output: read at its own indentation; a line
            # indented less (the tool's own text) ends it.
            if msg.startswith(" " * tb.indent):
                msg = msg[tb.indent:]
            elif msg.strip():
                return False
        if tb.state == DEBUG_MSG:
            if msg.lstrip().startswith("File ") and FRAME_RE.match(msg.lstrip()) is not None:
                # The first frame: the message is whole; it is what an exception line would have said.
                tb.state, tb.code_next = FRAMES, not msg[:1].isspace()
                tb.exception_lines.append(f"{tb.exception}: {tb.message or ''}"[:4096])
            elif msg.strip() and len(tb.lines) <= CONTINUATION_CAP:
                tb.message = msg.strip() if tb.message is None else f"{tb.message}\n{msg.strip()}"[:4096]
            tb.add(msg, line_no, important=True)
            return True
        if tb.state == FRAMES and tb.ipython:
            if msg[:1].isspace() or not exception_like(msg):  # a frame, a gutter line, a blank
                tb.add(msg, line_no)
            else:
                exception_line(tb, msg, line_no)
            return True
        if tb.state == FRAMES:
            return frames_step(tb, msg, line_no)
        if not msg.strip():
            tb.blanks += 1
            if tb.blanks > 2 and tb.record is None:
                return False
            tb.add(msg, line_no)
            return True
        if msg.startswith(CHAIN_MARKERS):
            tb.state, tb.blanks, tb.chained = CHAINED, 0, True
            tb.add(msg, line_no, important=True)
            return True
        if tb.state == AFTER_EXC and is_remote_banner(msg):
            tb.blanks = 0  # rpyc's proxy of an exception: the other side's traceback follows, in its message
            tb.add(msg, line_no, important=True)
            return True
        if tb.state == CHAINED and tb.ipython and is_rule(msg):
            tb.add(msg, line_no)
            return True
        if is_header(msg) or (tb.ipython and is_ipython_header(msg)):
            # A message that announces what follows (vLLM's ``RuntimeError: Error raised in subprocess:``,
            # torch.multiprocessing's ``-- Process 0 terminated with the following error:``), then a traceback:
            # the other process's, printed inside the message.
            announced = tb.state == AFTER_EXC and (any(
                text.rstrip().endswith(":") for text in (tb.exception_lines[-1:] + tb.lines[-1:]))
                or (bool(tb.lines) and is_remote_banner(tb.lines[-1])))
            if tb.state == CHAINED or tb.record is not None or announced:
                tb.nested = announced
                tb.state, tb.blanks = FRAMES, 0
                tb.add(msg, line_no, important=True)
                return True
            return False
        if tb.state == AFTER_EXC and tb.record is None and msg[:1].isspace() and FRAME_RE.match(msg.lstrip()):
            # Another traceback's frame or caret line (processes writing to one stderr: torchrun's ranks): not this
            # message's; the source line just taken for it, above a caret line, was that traceback's too.
            if tb.continued and msg.strip()[:1] in "^~" and tb.message and "\n" in tb.message:
                tb.message = tb.message.rpartition("\n")[0]
            return False
        if tb.state == AFTER_EXC and (tb.record is not None or continues(tb, msg)):
            # More lines of a multi-line exception message (inside the same log record, or indented).
            edge = cut_at_edge(tb, msg) if tb.record is None or row else 0  # (a record's own line: no cut row)
            # (a row a window cut the exception line at makes it whole again: no line of a message yet)
            tb.continued, tb.blanks = tb.continued + (not edge), 0  # blank lines end a traceback only in a row
            if len(tb.exception_lines) == 1 and tb.message is not None and len(tb.message) < 4096:
                # (a raw line cut with a bracket open, or mid-word at a window's edge, goes on where a terminal
                # wrapped it: no line break there)
                cut = edge != 0 or (tb.record is None and not msg[:1].isspace()
                               and brackets(tb.message.rpartition("\n")[2]) > 0)
                sep = "" if cut else "\n"
                tb.message = f"{tb.message}{sep}{msg}"
            if edge:  # the exception line, whole again (what it quotes is read from it: ``echo_refs``)
                tb.exception_lines[0] = f"{tb.exception_lines[0]}{msg}"[:4096]
                tb.edge = edge
            tb.add(msg, line_no)
            return True
        return False

    def close_stale(self, line_no: int, writer: str | None = None) -> list[Traceback]:
        """Close tracebacks left open too long, and -- when ``writer`` wrote the current line -- those of
        other writers that already have their exception line: a process prints its traceback in one go, so
        another writer's line means it is over (keeps the line-by-line path short when the writer of a
        traceback never writes again)."""
        out: list[Traceback] = []
        for key in [k for k, tb in self._open.items()
                    if line_no - tb.last_line > STALE_LINES
                    or (writer is not None and k != writer and tb.state == AFTER_EXC)]:
            out.extend(self._close(key))
        return out

    def close_all(self) -> list[Traceback]:
        out: list[Traceback] = []
        for key in sorted(self._open, key=lambda k: self._open[k].start_line):
            out.extend(self._close(key))
        return out

    def _close(self, key: str) -> list[Traceback]:
        tb = self._open.pop(key, None)
        return [tb.done()] if tb is not None else []

    def to_dict(self) -> list[dict[str, Any]]:
        return [tb.to_dict() for tb in self._open.values()]

    @classmethod
    def from_dict(cls, data: list[dict[str, Any]]) -> TracebackAssembler:
        asm = cls()
        for item in data:
            tb = OpenTraceback.from_dict(item)
            asm._open[tb.key] = tb
        return asm

