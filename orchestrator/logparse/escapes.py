"""A log whose colour codes were written out as text, read with the codes back.

vLLM colours its process prefixes (``\\x1b[1;36m(EngineCore pid=114)\\x1b[0;0m``).  A log that was looked at
before it was copied often shows those codes as text: ``less`` without ``-R`` writes ``ESC[1;36m``, ``cat -v``
writes ``^[[1;36m``, a log passed through a program's ``repr`` or a shell script shows ``\\x1b[``,
``\\033[``, ``\\e[`` or ``\\u001b[``, and rsyslog's files ``#033[``; a copy from a web page drops the escape byte
and keeps the rest (``[1;36m(EngineCore pid=114)[0;0m``).  Then no line starts with a process prefix, the
engine's records read as the main process's, and a worker's traceback is not told from the engine's.

``shown_escapes`` recognises one such spelling on a sample (several colour codes written that way, and not
one real escape byte); ``Unescaper`` writes the escape byte back for each, chunk by chunk.  No line is added
or removed, so line numbers stay the file's; only sizes change, and ``remap`` gives the file's.
"""

from __future__ import annotations

import re

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines
from orchestrator.logparse.prefixes import PROC

#: How the escape byte is written out, by who wrote it: ``less``, ``cat -v``, ``repr``/``printf`` spellings, and
#: rsyslog's escape of a control character as ``#`` and its octal code (``/var/log/syslog``).
SPELLINGS: tuple[bytes, ...] = (b"ESC", b"^[", b"\\x1b", b"\\x1B", b"\\033", b"\\e", b"\\u001b", b"\\u001B",
                               b"#033")
#: Lines with a colour code (SGR: ``[`` + numbers + ``m``) written that way needed in the sample.
_MIN_LINES = 2
#: The escape byte dropped (the spelling is empty): recognised only around a vLLM process prefix at a line's start
#: (or after a collector's column), as vLLM colours it, and then only colour codes (a number at least, then ``m``)
#: are made codes again.
DROPPED = b""
_TAIL = re.compile(rb"\[[0-9;]{1,16}m")  # one with a number at least: ``[m`` starts many a ``[module.py:N]``
_DROPPED_PREFIX = re.compile(rb"(?m)(?:^|(?<= ))" + _TAIL.pattern + PROC.encode() + _TAIL.pattern)
#: A line that starts so, the reset after the prefix lost too (a one-line paste of a Ray worker's line).
_DROPPED_START = re.compile(rb"(?m)^" + _TAIL.pattern + PROC.encode())
_LONGEST = max(map(len, SPELLINGS))
_HEAD = 128 * 1024
#: Any control sequence (a cursor move, ``[K`` clearing the line: tqdm's), written back once the log is known
#: to spell its codes so.
_CSI_TAIL = rb"\[[0-?]{0,16}[ -/]{0,2}[@-~]"


def shown_escapes(sample: bytes) -> bytes | None:
    """The spelling of the escape byte the colour codes of ``sample`` are written in, when they all are
    (``ESC``, ``^[``, ...) and on more than one line (a script's ``printf '\\033[1m'`` is not), else None.
    One pass for the codes' tails (``[1;36m``: rare in a log without colour), each then checked for a spelling
    just before it, over the sample's start: a coloured log shows its codes from its first records."""
    if b"\x1b" in sample:
        return None
    sample = sample[:_HEAD]
    if len(_DROPPED_PREFIX.findall(sample)) >= _MIN_LINES or _DROPPED_START.search(sample) is not None:
        return DROPPED
    lines: dict[bytes, set[int]] = {}
    line = at = 0
    for m in _TAIL.finditer(sample):
        before = sample[max(0, m.start() - _LONGEST):m.start()]
        spelling = next((sp for sp in SPELLINGS if before.endswith(sp)), None)
        if spelling is None:
            continue
        line, at = line + sample.count(b"\n", at, m.start()), m.start()
        seen = lines.setdefault(spelling, set())
        seen.add(line)
        if len(seen) >= _MIN_LINES:
            return spelling
    return None


def shown_returns(sample: bytes) -> bytes | None:
    """How the sample's carriage returns are written out, when they are: ``cat -v``'s ``^M`` or rsyslog's octal
    ``#015`` ending lines (a vLLM record's lines but its last), on more than one line, and not one real carriage
    return; else None."""
    if b"\r" in sample:
        return None
    return next((cr for cr in _SHOWN_CRS if sample.count(cr + b"\n") >= _MIN_LINES), None)


_SHOWN_CRS = (b"^M", b"#015")


def _code_re(spelling: bytes, tail: bytes) -> re.Pattern[bytes]:
    return re.compile(re.escape(spelling) + b"(?=" + tail + b")")


class Unescaper(WholeLines):
    """Writes the escape byte back where ``spelling`` stands for it before a control sequence, and the carriage
    return where ``returns`` (its spelling) ends a line."""

    def __init__(self, spelling: bytes | None, returns: bytes | None = None) -> None:
        super().__init__()
        self._code = None if spelling is None else _code_re(spelling, _TAIL.pattern if spelling == DROPPED else _CSI_TAIL)
        self._returns = returns

    def _lines(self, block: bytes) -> bytes:
        if self._code is not None:
            block = self._code.sub(b"\x1b", block)
        return block.replace(self._returns + b"\n", b"\r\n") if self._returns else block

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with the file's size (its lines are the file's)."""
        return analysis.renumbered(lambda n: n, analysis.lines, self.read)
