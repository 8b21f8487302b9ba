"""A log exported as CSV, each line a quoted field, read as the log it was.

A log viewer's or a spreadsheet's CSV download writes each line of the log as a field in double quotes, a quote
inside it doubled: ``"ERROR 07-02 01:08:20 [engine.py:67] File ""/usr/lib/x.py"", line 3"``.  The quote in
front of every line hides the record's header from the parser (``ERROR``, a worker's prefix) and the doubled
quotes break up frame lines.  ``quoted_lines`` recognises the shape on a sample: nearly every line with text
opens with a quote, and the quotes inside are doubled.  ``Unquoter`` takes them off again (the opening quote,
a closing one at the line's end, one of each doubled pair); lines are neither added nor dropped, so line
numbers are the file's.  (A field the export cut at a comma, its quote never closed, keeps what it has.)
"""

from __future__ import annotations

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

#: Lines with text needed in the sample, and the share of them that must open with a quote.
_MIN_LINES = 3
_MIN_SHARE = 0.9


def quoted_lines(sample: bytes) -> bool:
    """Whether nearly every line of ``sample`` with text is a CSV field in double quotes: it opens with one, no
    quote inside it stands alone (a log whose lines merely start with a quoted string is not one), and quotes
    inside are doubled or the lines close with one."""
    lines = [line.rstrip(b"\r") for line in sample.split(b"\n")[:-1] if line.strip()]  # (the last may be cut)
    if len(lines) < _MIN_LINES:
        return False
    opened = [line for line in lines if line.startswith(b'"')]
    if len(opened) < _MIN_SHARE * len(lines):
        return False
    inner = [_inside(line) for line in opened]
    if sum(b'"' in text.replace(b'""', b"") for text in inner) > (1 - _MIN_SHARE) * len(inner):
        return False
    closed = sum(len(line) > 1 and len(line) - len(text) == 2 for line, text in zip(opened, inner, strict=True))
    return any(b'""' in text for text in inner) or closed >= _MIN_SHARE * len(lines)


def _inside(line: bytes) -> bytes:
    """A quoted field's text, still escaped: without its opening quote and the closing one at its end."""
    text = line[1:]
    if text.endswith(b'"') and (len(text) - len(text.rstrip(b'"'))) % 2 == 1:
        text = text[:-1]
    return text


class Unquoter(WholeLines):
    """Takes the CSV quoting off each line, chunk by chunk."""

    def _lines(self, block: bytes) -> bytes:
        out: list[bytes] = []
        for text in block[:-1].split(b"\n") if block else ():
            cr = text.endswith(b"\r")
            line = text[:-1] if cr else text
            if line.startswith(b'"'):
                line = _inside(line).replace(b'""', b'"')
            out.append(line + (b"\r\n" if cr else b"\n"))
        return b"".join(out)

    def _last(self, rest: bytes) -> bytes:
        return self._lines(rest + b"\n")[:-1] if rest else rest

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with the file's size (its lines are the file's)."""
        return analysis.renumbered(lambda n: n, analysis.lines, self.read)
