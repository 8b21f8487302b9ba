"""What a traceback's own text says of it, and what the line before an exception line says of that line.

Pure functions over ``Traceback`` and ``ParsedLine`` that ``weighing.py`` and ``rules.py`` ask: whether a
caught step's CUDA error leaves the device unusable, whether a chain was cut before its last exception line,
which ``assert`` statement a bare ``AssertionError`` failed on, and whether an exception line sits under a
frame (or another line) of its own writer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from orchestrator.logparse.lines import decode
from orchestrator.logparse.prefixes import MAIN, ParsedLine, parse_line
from orchestrator.logparse.tbforms import IPYTHON_FRAME
from orchestrator.logparse.tbstate import Traceback
from orchestrator.logparse.tbtext import (
    CHAIN_MARKERS,
    ELISION_RE,
    exception_like,
    is_bare_exception,
    is_frame_line,
)

#: Old SGLang's model worker step, whose errors its router catches (``Exception in ModelRpcClient:``) and goes on.
_STEP_FRAME = ", in exposed_step"
#: CUDA errors that stick to the context: after one, every call of the process fails.
_STICKY_CUDA_ERRORS = ("device-side assert triggered", "illegal memory access", "unspecified launch failure")
#: An ``assert`` statement a frame shows: indented, or behind IPython's gutter arrow (``-> 1228 assert x``).
_ASSERT_SOURCE = re.compile(r"^\s*(?:-*> ?\d+\s+)?(?P<stmt>assert\b.*)$")
_CONTEXT = re.compile(r"^\s*\d+ ")  # IPython's gutter without its arrow: a line around the one that ran


def sticky_step(tb: Traceback) -> bool:
    """Whether ``tb`` is a caught step's CUDA error that leaves the device unusable for the process."""
    return (_STEP_FRAME in tb.text and "CUDA error: " in tb.message
            and any(text in tb.message for text in _STICKY_CUDA_ERRORS))


def chain_cut(tb: Traceback) -> bool:
    """Whether ``tb`` goes on past a chain marker (``During handling of the above exception ...``) to an
    exception line it does not show: the paste, or the log, ended first."""
    return sum(map(tb.text.count, CHAIN_MARKERS)) >= len(tb.exception_lines) > 0


def failed_assert(tb: Traceback) -> str:
    """The statement a bare ``AssertionError`` (no message) failed on, as the innermost frame shows it above
    the exception line (``    assert param.shape == loaded.shape``, IPython's ``-> 1228 assert ...`` among
    its context lines), else "".  An exception that wraps a bare one and says only its name
    (``torch._inductor.exc.InductorError: AssertionError:``) failed on that statement too."""
    if tb.exception is None:
        return ""
    if tb.exception.rsplit(".", 1)[-1] != "AssertionError" and tb.message.rstrip(": ") != "AssertionError":
        return ""
    lines = tb.text.split("\n")
    at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(tb.exception)), 0)
    for line in reversed(lines[:at]):
        if not line.strip() or _CONTEXT.match(line) or not line.strip().strip("^~"):
            continue  # blank, IPython's context lines, a caret line
        m = _ASSERT_SOURCE.match(line)
        return "" if m is None else m.group("stmt").strip()[:4096]
    return ""


#: An exception line that names its class with the module (``torch._dynamo.exc.BackendCompilerFailed: ...``).
_QUALIFIED = re.compile(r"[a-z_]\w*(?:\.\w+)+\.[A-Z]\w*(?:Error|Exception): ")
#: An exception class named by its module whose name does not say it is one (``triton.runtime.errors.
#: OutOfResources: out of resource: ...``): an exception line only right under a frame.
_IN_MODULE = re.compile(r"[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w*: \S")


def cut_exception_line(line: ParsedLine, prev_raw: bytes | None, line_no: int, frame_above: bool) -> bool:
    """Whether ``line``, read outside any traceback, is the exception line of one whose header was cut off (a
    pasted tail, or only its exception line pasted): right under a frame, named with its module, the log's
    first line, within reach of a frame line of its writer (``frame_above``) or under a pasted first line."""
    msg = line.message
    if is_bare_exception(msg):
        return (after_frame(line, prev_raw) or _QUALIFIED.match(msg) is not None or line_no == 1 or frame_above
                or under_first_line(line, prev_raw, line_no))
    return _IN_MODULE.match(msg) is not None and after_frame(line, prev_raw)


def after_frame(line: ParsedLine, prev_raw: bytes | None) -> bool:
    """Whether the line before ``line`` was a traceback frame of the same writer: ``  File ...`` or its
    indented code, or, with the indentation lost on the way, a ``File ...`` line, a caret line, the
    ``raise`` or ``assert`` statement the innermost frame shows or the ``...`` a paste put for it."""
    prev = _same_writer(line, prev_raw)
    if prev is None:
        return _raised_above(line, prev_raw) is not None
    return (prev[:1].isspace() or prev.startswith(("raise ", "assert ")) or is_frame_line(prev)
            or ELISION_RE.match(prev) is not None)


def under_first_line(line: ParsedLine, prev_raw: bytes | None, line_no: int) -> bool:
    """Whether ``line`` is the log's second line, under a line of the same writer: a paste that began at the
    source line of a traceback's innermost frame, its indentation lost (and, on a writer's record, the prefix
    too: the record's exception line under a bare statement)."""
    if line_no != 2 or prev_raw is None:
        return False
    if _same_writer(line, prev_raw) is not None:
        return True
    prev = _line_before(prev_raw)
    return line.record is not None and prev.key == MAIN and prev.record is None and _STATEMENT.match(prev.message) is not None


def failed_statement(line: ParsedLine, prev_raw: bytes | None, frames: Sequence[str] = ()) -> str | None:
    """The ``assert`` statement just before a bare ``AssertionError`` of the same writer (a traceback's innermost
    frame, its header cut off), or among the last ``frames`` above it (its frame records, caret lines under the
    statement): what the assertion was, which the exception line alone does not say."""
    if line.message.strip() != "AssertionError":
        return None
    prev = _same_writer(line, prev_raw)
    if prev is None:
        prev = _raised_above(line, prev_raw)
    for text in ([prev] if prev is not None else []) + list(reversed(frames[-3:])):
        if text.strip().startswith("assert "):
            return text.strip()
    return None


def _same_writer(line: ParsedLine, prev_raw: bytes | None) -> str | None:
    """The message of the line before ``line`` when the same writer wrote it in the same record."""
    if prev_raw is None:
        return None
    prev = _line_before(prev_raw)
    return prev.message if prev.key == line.key and prev.record == line.record else None


#: A line of Python code as a frame shows it (a statement, an assignment or a call).
_STATEMENT = re.compile(r"\s*(?:(?:from|import|raise|return|assert|await|yield|with|for|if) \S|[\w.\[\]]+(?: [-+*/|]?= | ?\())")

#: A record header a paste shortened to its level (``ERROR ... assert x``).
_ELIDED_HEADER = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\.{3}|…) ")


def _raised_above(line: ParsedLine, prev_raw: bytes | None) -> str | None:
    """The statement that raised ``line``'s exception when a paste kept the writer's prefix on it but dropped
    it from the exception line under it: ``(EngineCore pid=5) ERROR ... assert n % m == 0``, then a bare
    ``AssertionError``; or ``raise ValueError(...)``, then ``ValueError: ...``.  None otherwise."""
    if prev_raw is None or line.key != MAIN or line.record is not None:
        return None
    prev = _line_before(prev_raw)
    if prev.key == MAIN:
        return None
    stmt = _ELIDED_HEADER.sub("", prev.message.strip(), count=1)
    name = line.message.partition(":")[0].strip().rpartition(".")[2]
    if stmt.startswith("assert ") and name == "AssertionError":
        return stmt
    raised = stmt.startswith("raise ") and stmt[6:].partition("(")[0].strip().rpartition(".")[2]
    return stmt if raised and raised == name else None


@lru_cache(maxsize=8)
def _line_before(prev_raw: bytes) -> ParsedLine:
    """``prev_raw`` parsed, once for the checks above that all ask about the same line before."""
    return parse_line(decode(prev_raw))


def cut_in_frames(frame: Sequence[Any], shown: Sequence[str]) -> Traceback | None:
    """The traceback a log ends inside, its header and exception line not in it (a paste of frames only, cut
    above the exception line): ``frame`` is the last frame line read outside a traceback (``[line, process,
    writer, text, record]``), ``shown`` the log's last lines with text (four); None unless they end at that frame
    line, or at its source line and caret line (its writer's, in its record), and a fragment of a line the paste
    cut (``Aug 19 1``; the next record's head, cut in its stamp: the start of the line before; the next frame line,
    cut before its line number) after them."""
    text = str(frame[3])
    if not shown or not text:
        return None
    if len(shown) > 1 and text[:200] not in shown[-1] and (
            len(shown[-1]) <= _FRAGMENT or shown[-2].startswith(shown[-1])
            or _cut_frame_line(parse_line(shown[-1]).message.strip())):
        shown = shown[:-1]
    at = next((i for i in range(len(shown) - 1, -1, -1) if text[:200] in shown[i]), None)
    if at is None:
        return None
    after = [parse_line(line) for line in shown[at + 1:]]
    record = frame[4] if len(frame) > 4 else None
    if len(after) > 2 or any(p.key != frame[2] or p.record != record or exception_like(p.message.strip())
                             for p in after):
        return None
    lines = [text, *("    " + p.message.strip() for p in after)]
    line_no = int(frame[0])
    return Traceback(str(frame[2]), str(frame[1]), None, "", "\n".join(lines), line_no, line_no + len(lines) - 1,
                     None, (), False)


def cut_in_ipython_frames(frame: Sequence[Any], shown: Sequence[str]) -> Traceback | None:
    """The IPython report a log ends inside (a paste of a notebook's frames, cut above its exception line):
    ``frame`` is the last IPython frame line read outside a traceback (as for ``cut_in_frames``), ``shown`` the
    log's last lines with text; None unless every line after that frame line is one of its context lines
    (``    124 if ...``), the line that was running among them (``--> 127 ...``)."""
    text = str(frame[3])
    after = _after_last(text, shown)
    if not ran_in_context(after):
        return None
    line_no = int(frame[0])
    return Traceback(str(frame[2]), str(frame[1]), None, "", "\n".join([text, *after]), line_no,
                     line_no + len(after), None, (), False)


def ran_in_context(lines: Sequence[str]) -> bool:
    """Whether ``lines`` are context lines of an IPython frame, the line that ran among them."""
    return bool(lines) and all(_IPYTHON_CONTEXT.match(line) for line in lines) and any(
        line.lstrip().startswith("-") for line in lines)


def framed_below(text: str, shown: Sequence[str]) -> bool:
    """Whether the last of ``shown`` (a log's last lines) that holds ``text`` (an exception line) is followed by
    an IPython frame line and its context lines, to the end: Databricks prints a cell's exception line first,
    then where it was raised (``File <command-...>, line 3``, ``----> 3 generator = ...``)."""
    after = _after_last(text, shown)
    return len(after) > 1 and IPYTHON_FRAME.match(after[0]) is not None and ran_in_context(after[1:])


def _after_last(text: str, shown: Sequence[str]) -> list[str]:
    """The lines of ``shown`` after the last one that holds ``text`` (none when none holds it)."""
    at = next((i for i in range(len(shown) - 1, -1, -1) if text[:200] in shown[i]), None)
    return [] if at is None else list(shown[at + 1:])


#: A context line of IPython's frame: the source line's number, an arrow in front of the one that ran.
_IPYTHON_CONTEXT = re.compile(r"^(?:\s+|-*> ?)\d+(?:\s|$)")


def _cut_frame_line(message: str) -> bool:
    """Whether ``message`` is the start of a frame line, cut before its line number (where a paste ended)."""
    return message.startswith('File "') and _FRAME_START.match(message) is None


_FRAME_START = re.compile(r'File "[^"]*", line \d')
#: The longest last line taken for a fragment a paste cut (a collector's stamp cut short: ``Aug 19 1``).
_FRAGMENT = 16
