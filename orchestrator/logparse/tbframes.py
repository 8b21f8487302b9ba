"""The frames of an open traceback: Python's frame and source lines, and what a paste did to them.

``TracebackAssembler._step`` hands a traceback's line here while it reads frames: a frame line, its source
and caret lines (also when the paste lost their indentation, and a statement shown over several lines), a
frame line a terminal wrapped, frames a paster left out (``...``), grep's ``--`` between groups, another
process's ``Process SpawnProcess-1:`` written into it; Ray's re-raise of a remote worker's exception; the program's own output printed between a frame line and its
source line; else the
traceback's exception line (``tbmessage.exception_line``).
"""

from __future__ import annotations

import re

from orchestrator.logparse.prefixes import multiprocessing_header
from orchestrator.logparse.tbforms import is_remote_exception
from orchestrator.logparse.tbmessage import exception_line
from orchestrator.logparse.tbstate import OpenTraceback, remote_line
from orchestrator.logparse.tbtext import (
    ELISION_RE,
    EXC_RE,
    FRAME_RE,
    STATEMENT_GOES_ON,
    brackets,
    exception_like,
    is_header,
)

#: A whole frame line, and one that ends with its function's name (which a terminal may have cut short).
_WHOLE_FRAME = re.compile(r'File "[^"]*", line \d+, in \S')
_FRAME_LINE_END = re.compile(r'File "[^"]*", line \d+, in \w*$')
#: A frame line cut in its file's path (a paste's end): no exception line starts so.
_CUT_FRAME = re.compile(r'File "[^"]*$')
#: A lower-case word alone: no exception is named so.
_WORD = re.compile(r"^[a-z_][a-z0-9_]*$")
_PRINTED = 4  # the program's lines taken between a frame line and its source line, at most


def frames_step(tb: OpenTraceback, msg: str, line_no: int) -> bool:
    """Take ``msg``, a line of ``tb`` while it reads frames; False when the line is not the traceback's (records
    interleaved with it, then a line no exception's: it was cut before)."""
    if msg == "--":  # grep's line between two groups (a tool's ``grep -A``/``-B`` of the log): frames left out
        tb.add(msg, line_no)
        return True
    code, tb.code_next = tb.code_next, False
    if not msg or msg[:1].isspace() or is_header(msg):
        tb.add(msg, line_no)
        return True
    if (msg[0] in "F^~" and (FRAME_RE.match(msg) is not None or _CUT_FRAME.match(msg) is not None)) or (
            code and not exception_like(msg)):
        # The traceback lost its indentation on the way (pasted as text): a frame line, and the source
        # line after it, are still frames; so are the next lines of a statement shown over several
        # (Python 3.13: while a bracket is open, after a trailing comma, ``...<7 lines>...``), and a
        # caret line keeps what came before it.  A frame line cut in its path is one too.
        if msg[0] in "^~" and FRAME_RE.match(msg) is not None:
            tb.code_next = code
        elif msg.startswith("File "):
            tb.code_next, tb.depth = True, 0
        else:
            tb.depth = max(0, tb.depth + brackets(msg)) if code else 0
            tb.code_next = code and (tb.depth > 0 or STATEMENT_GOES_ON.search(msg) is not None)
        tb.add(msg, line_no)
        return True
    if tb.lines and _wrapped_frame(tb.lines[-1], msg):
        # The rest of a frame line a terminal wrapped (``..., line 1`` then ``066, in run_server``): the
        # frame's source line comes next.
        tb.add(msg, line_no)
        return True
    if tb.remote and tb.lines and _wrapped_remote(tb.lines[-1], msg):
        # The rest of Ray's line a terminal wrapped (``... actor_id=33c4d273bee9db7`` then ``120dca78a01000000,
        # repr=<...ActorA object at 0x7fc9...>)``): the remote worker's frames come next.
        tb.add(msg, line_no)
        return True
    if is_remote_exception(msg) and (tb.message is None or tb.remote):
        remote_line(tb, msg, line_no)  # Ray's driver re-raising a remote worker's exception
        return True
    if tb.remote and not any(c.isalpha() for c in msg):
        tb.add(msg, line_no)  # no word after Ray's wrapper line (a paste cut in the next record's ``[20``): the
        return True  # wrapper's line still says what the worker raised
    if (tb.interleaved and not exception_like(msg)) or _WORD.match(msg) is not None:
        # Records came, then a line that is no exception's, or a lower-case word Python never prints as one (the
        # start of the next line's column, cut: ``sglan``): the traceback was cut before.
        return False
    if msg[0] in ".[(<\u2026" and ELISION_RE.match(msg) is not None:
        tb.add(msg, line_no)  # frames its paster left out
        return True
    if msg[0] == "P" and multiprocessing_header(msg) is not None:
        # A child process's ``Process SpawnProcess-1:`` written into the parent's traceback (two
        # writers on one stderr): not this traceback's exception line.
        tb.interleaved += 1
        return True
    if len(tb.lines) == 1 and EXC_RE.match(msg) is None and not exception_like(msg):
        # The line right after the header, no exception's: Python writes a frame there, so it is one, mangled
        # (a paste that lost its ``File`` line and garbled the source line under it).
        tb.add(msg, line_no)
        return True
    if tb.printed < _PRINTED and EXC_RE.match(msg) is None and _source_awaited(tb.lines):
        # What the program printed (stdout) between a frame line and its source line (stderr), both going to one
        # log: transformers' ``trust_remote_code`` prompt above ``answer = input(``.  No exception line starts so.
        tb.printed += 1
        return True
    exception_line(tb, msg, line_no)
    return True


def _source_awaited(lines: list[str]) -> bool:
    """Whether the last line of a traceback that is not blank is an indented frame line: its source line (or the
    next frame, or the exception line) comes next."""
    last = next((line for line in reversed(lines) if line.strip()), "")
    return last[:1].isspace() and FRAME_RE.match(last.lstrip()) is not None and last.lstrip()[:1] == "F"


def _wrapped_remote(before: str, row: str) -> bool:
    """Whether ``row`` is the rest of Ray's ``RayTaskError(X): ray::f() (pid=..., repr=<...>)`` line ``before``,
    which a terminal wrapped: ``before`` leaves a bracket open, ``row`` closes it and is no exception line."""
    return (before.count("(") > before.count(")") and row.rstrip().endswith(")") and not exception_like(row)
            and is_remote_exception(before))


def _wrapped_frame(before: str, row: str) -> bool:
    """Whether ``row``, at column 0 after the traceback line ``before``, is the rest of that frame line, which
    a terminal wrapped: ``before`` is a frame line cut short, or one that ends with a function's name and
    ``row`` is a lower-case word (``..._from_r`` then ``emote``)."""
    if 'File "' not in before or exception_like(row):
        return False  # (``File "<string>", line 1`` then ``SyntaxError: ...``: no source line to show)
    if _WHOLE_FRAME.search(before) is None:
        return True
    return _WORD.match(row) is not None and _FRAME_LINE_END.search(before) is not None
