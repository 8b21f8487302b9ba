"""The exception lines of a traceback being read, and the lines its message goes on over.

A traceback's exception is its first exception line's, unless one chained after it says what happened
(``translates``, an exception group's part, what a cancellation became).  A message may go on past its line:
indented, after a comma or a colon, pydantic's field lines, the unprefixed lines after a log record's first
(``told_on``), and in rich's boxed report the words it wrapped at the box's width (``rich_step``); a Rust
panic's message is on the line after its location (``panic_step``).  The assembler (``tracebacks``) asks; these
only read and change the ``OpenTraceback``.
"""

from __future__ import annotations

import re

from orchestrator.logparse.prefixes import ParsedLine
from orchestrator.logparse.tbforms import PANIC_TAIL, is_panic_frame, quoted_python_error
from orchestrator.logparse.tbstate import AFTER_EXC, CHAINED, FRAMES, OpenTraceback
from orchestrator.logparse.tbtext import (
    CHAIN_MARKERS,
    EXC_RE,
    LEVELS,
    PYDANTIC_ITEM_RE,
    PYDANTIC_LOC_RE,
    brackets,
    exception_like,
    is_header,
    is_rich_header,
    translates,
)

#: Lines a raw exception message may go on over.
CONTINUATION_CAP = 32


def rich_step(tb: OpenTraceback, msg: str, line_no: int) -> bool:
    """A line of rich's boxed report, when it is one: the box's lines (frames, source, locals) until its
    bottom rule; after it the exception line, and the rest of its message that rich wrapped at the box's
    width (a line that filled the width goes on on the next)."""
    if tb.state in (FRAMES, CHAINED) and (msg[:1] in ("│", "╰", "╭") or not msg.strip()):
        if is_rich_header(msg):  # a chained exception's box
            tb.rich, tb.state = len(msg), FRAMES
        tb.add(msg, line_no)
        return True
    if tb.state == FRAMES:
        chained = tb.chained
        exception_line(tb, msg, line_no)
        tb.chained = chained and len(tb.exception_lines) > 1  # (asked again once its message is whole)
        return True
    word = msg.split(None, 1)[0] if msg.strip() else ""
    if (tb.state == AFTER_EXC and word and tb.continued < CONTINUATION_CAP and tb.lines
            and len(tb.lines[-1]) + 1 + len(word) > tb.rich - 2  # (its first word did not fit on the last)
            and not exception_like(msg) and not msg.startswith(CHAIN_MARKERS)):
        tb.continued, tb.joined = tb.continued + 1, True  # (one line, wrapped: its words joined again)
        last = tb.exception_lines[-1]
        joined = tb.exception_lines[-1] = f"{last.rstrip()} {msg.strip()}"[:4096]
        was, now = EXC_RE.match(last), EXC_RE.match(joined)
        if was is None or now is None:
            tb.message = joined.strip() if tb.message == last.strip() else tb.message
        elif (tb.exception, tb.message) == (was.group("exc"), (was.group("msg") or "").strip()) or (
                tb.chained and translates(tb.message or "", now.group("msg") or "")):
            tb.exception, tb.message = now.group("exc"), (now.group("msg") or "").strip()
        tb.add(msg, line_no)
        return True
    return False


def panic_step(tb: OpenTraceback, msg: str, line_no: int) -> bool:
    """A line after a Rust panic's: its message, when the panic's line ended at the location (Rust >= 1.73),
    then the note on its backtrace, or the backtrace and its frames; anything else ends it."""
    said = tb.message or ""
    if len(tb.lines) == 1 and said.endswith(":") and msg.strip() and not msg.startswith(PANIC_TAIL):
        tb.message = tb.exception_lines[0] = f"{said} {msg.strip()}"[:4096]
        tb.exception = quoted_python_error(tb.message)
    elif not (msg.startswith(PANIC_TAIL) or (len(tb.lines) > 1 and is_panic_frame(msg))):
        return False
    tb.add(msg, line_no)
    return True


def told_on(tb: OpenTraceback, msg: str) -> bool:
    """Whether a raw line after a log record's exception line goes on with its message: pydantic's
    ``N validation error(s) for X`` written by a logger that prefixes only a record's first line (the useful
    part, ``Value error, World size (2) is larger than ...``, is on the lines after it)."""
    first = tb.exception_lines[0] if tb.exception_lines else ""
    return tb.state == AFTER_EXC and len(tb.exception_lines) == 1 and "validation error" in first and (
        msg[:1].isspace() or continues(tb, msg))


def awaits_rest(tb: OpenTraceback, line_no: int) -> bool:
    """Whether ``tb`` is a log record's exception line, on the line before ``line_no``, whose message ends
    announcing more (``ImportError: .../torchac_cuda.so:``): a paste may have wrapped the rest onto the next line."""
    return (tb.record is not None and tb.state == AFTER_EXC and tb.last_line == line_no - 1
            and len(tb.exception_lines) == 1 and not tb.continued and tb.exception_lines[0].rstrip().endswith(":"))


def wrapped_rest(line: ParsedLine) -> bool:
    """Whether ``line`` may be the rest of a record's message that a paste wrapped (``awaits_rest``): raw, with
    no prefix of its own, indented (`` undefined symbol: _ZN3c10...``), and no frame, header or exception line."""
    msg = line.message
    rest = msg.lstrip()
    return (line.record is None and line.pid is None and msg[:1].isspace() and bool(rest)
            and not rest.startswith('File "') and not exception_like(rest) and not is_header(rest))


#: The shortest exception line taken for a row a terminal cut at its edge (narrower windows are rare).
_EDGE_MIN = 60


def cut_at_edge(tb: OpenTraceback, msg: str) -> int:
    """The width of the window a terminal's copy cut a raw exception line at, mid-word, when ``msg`` is the rest
    of it (``... environment variable RANK expected, bu`` then ``t not set``), else 0: the line ends inside a word or
    a path and is at least as wide as every line of its traceback (a window wraps every longer row, so no row
    is wider than the cut one), and ``msg`` starts mid-word (or mid-path), is no wider, and is no exception, header or log
    line of its own.  A log record's exception line (``awaits_edge``): the row after it, which has no head, is as
    wide as a whole row (-1: a head not known, a paste that starts inside the record).  A line wrapped over more
    rows: each row after a row that filled the window (``OpenTraceback.edge``)."""
    if len(tb.exception_lines) != 1 or not _mid_token(msg[:1]) or exception_like(msg) or is_header(msg) or (
            _OWN_LINE.match(msg) is not None):
        return 0
    row = tb.exception_lines[0]
    if tb.edge:  # a row joined already: the next goes on only after a row that filled the window
        full = tb.edge > 0 and bool(tb.lines) and len(tb.lines[-1]) == tb.edge and _mid_token(row)
        return tb.edge if full and len(msg) <= tb.edge else 0
    if tb.continued:
        return 0
    width = len(row)  # (a log record's lines all carry its head: their messages compare as the rows do)
    # A record's row is its head and its message; a head not known (a paste that starts inside the record), any.
    row_width = width if tb.record is None else len(tb.head) + width if tb.head else -1
    if 0 < row_width < _EDGE_MIN or not _mid_token(row) or len(msg) > row_width > 0:
        return 0
    return row_width if all(len(text) <= width for text in tb.lines) else 0


def _mid_token(text: str) -> bool:
    """Whether ``text`` ends inside a word or a path (a letter, a digit, ``/``, ``_`` or ``-``): where a window's edge
    cut it, rather than after a word, a sentence or a colon."""
    last = text[-1:]
    return last.isalnum() or (last != "" and last in "/_-")


def awaits_edge(tb: OpenTraceback, line_no: int) -> bool:
    """Whether ``tb`` is a log record's exception line, on the line before ``line_no``, that a terminal may have
    cut at its edge (``cut_at_edge`` says whether the line at ``line_no`` is the rest: a row of no writer's)."""
    return (tb.record is not None and tb.state == AFTER_EXC and tb.last_line == line_no - 1
            and len(tb.exception_lines) == 1 and not tb.continued and tb.edge >= 0
            and _mid_token(tb.exception_lines[0]))


#: A line that starts like one of its own: a log record's level (``INFO:     127.0.0.1 ...``), or a tool's name
#: before a colon (``srun: error: ...``, ``sys:1: ResourceWarning``, ``wandb: ...``).
_OWN_LINE = re.compile(r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b|[A-Za-z][\w.-]{2,}(?::\d+)*:(?:\s|$)")


def continues(tb: OpenTraceback, msg: str) -> bool:
    """Whether a raw line after the exception line still belongs to its message: indented, Ray's reason an
    actor died after its fields, the rest of a sentence cut after a comma or announced by a colon, or, after
    pydantic's ``N validation error(s) for X``, a field name alone on its line or a ``- `` item."""
    if tb.continued >= CONTINUATION_CAP:
        return False
    if msg[:1].isspace() or cut_at_edge(tb, msg) != 0:
        return True
    if tb.continued and msg.startswith("The actor is dead because"):
        return True  # Ray's ActorDiedError: its indented fields, then why the actor died (the exit detail)
    message = tb.message or ""
    if not message.strip() and tb.exception_lines and tb.exception_lines[-1].rstrip().endswith(":"):
        return not exception_like(msg)  # the message on the lines after it (torch.multiprocessing's, past a blank)
    if not exception_like(msg) and (message.endswith(",") or (
            not tb.blanks and message.partition("\n")[0].endswith(":"))):
        # A sentence cut after a comma (a wrapped paste, a message written over lines), or a message that
        # announces what follows (Triton's "at 1:0:", then the source line, a caret and the error): up to a
        # blank line.
        return True
    if (message and brackets(message.rpartition("\n")[2]) > 0 and msg.strip() and not exception_like(msg)
            and not is_header(msg) and msg not in CHAIN_MARKERS):
        # A sentence cut with a bracket open ("... stored in KV cache (", a terminal's wrap): its rest.
        return True
    first = tb.exception_lines[0] if tb.exception_lines else ""
    if "validation error" in first and (PYDANTIC_LOC_RE.match(msg) is not None
                                         or PYDANTIC_ITEM_RE.search(msg) is not None):
        # The field a pydantic error is about, on its own line ("gpu_memory_utilization"), and its error's
        # lines, when their indentation was lost on the way ("Value error, ...", "[type=...]").
        return True
    return msg.startswith("- ") and ("validation error" in first or tb.continued > 0)


def exception_line(tb: OpenTraceback, msg: str, line_no: int) -> None:
    tb.state, tb.blanks = AFTER_EXC, 0
    tb.exception_lines.append(msg[:4096])
    tb.add(msg, line_no, important=True)
    if tb.message is None or tb.remote:
        tb.remote = False
        m = EXC_RE.match(msg)
        if m is not None and m.group("exc") not in LEVELS:
            tb.exception, tb.message = m.group("exc"), (m.group("msg") or "").strip()
        else:
            tb.exception, tb.message = None, msg.strip()
    elif tb.chained and (m := EXC_RE.match(msg)) is not None and m.group("exc") not in LEVELS and (
            translates(tb.message, m.group("msg") or "") or _is_group(tb.exception)
            or (_is_control_flow(tb.exception) and not _is_control_flow(m.group("exc")))):
        # Raised from the first to say what it meant (``except KeyError: raise ValueError("model type
        # `qwen3_tts` ... not recognized")``, ``raise ImportError("Please install bitsandbytes ...") from
        # err``): the same trouble, told for the user.  Or the first was an exception group, which only
        # carries its parts' exceptions: the first part's says what failed.  Or the first was control flow,
        # not an error: a task's cancellation, the way a timeout stops what it waits for (``async_timeout``
        # turns the ``CancelledError`` into ``TimeoutError``), or an iterator's end (importlib's
        # ``StopIteration``, then ``PackageNotFoundError``): what it became is what happened.
        tb.exception, tb.message = m.group("exc"), (m.group("msg") or "").strip()
    elif tb.nested and (m := EXC_RE.match(msg)) is not None and m.group("exc") not in LEVELS:
        tb.exception, tb.message = m.group("exc"), (m.group("msg") or "").strip()  # what the other process raised
    tb.chained = tb.nested = False


#: Exceptions that steer the program rather than report an error.
_CONTROL_FLOW = frozenset({"CancelledError", "StopIteration", "StopAsyncIteration", "GeneratorExit"})


def _is_control_flow(exception: str | None) -> bool:
    """Whether ``exception`` names one that steers (asyncio's ``CancelledError``, ``StopIteration``, ...)."""
    return exception is not None and exception.rpartition(".")[2] in _CONTROL_FLOW


def _is_group(exception: str | None) -> bool:
    """Whether ``exception`` names an exception group (``ExceptionGroup``, ``exceptiongroup.BaseExceptionGroup``)."""
    return exception is not None and exception.rpartition(".")[2] in ("ExceptionGroup", "BaseExceptionGroup")
