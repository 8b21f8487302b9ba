"""What a paste puts around a log, taken off: a column in front of every line, Markdown's code fences.

How a log reaches a user adds columns the parser would read as the message's start: a reply or an e-mail
quotes it (``> `` before every line, ``>`` alone on an empty one); ``cat -n``, ``nl``, ``less -N`` or an
editor number its lines (``     1\\t``, ``      1 ``, ``1 | ``); ``grep -n -A 40 Traceback`` numbers the lines
it shows (``123:`` for a match, ``124-`` for context, ``--`` between groups); pm2 names the app (``0|vllm  |
``); a code block nested in a Markdown list indents every line (two blanks or more, or a tab); a terminal
pane (tmux, a TUI's log panel) frames each line in a box's sides (``│ `` before it, `` │`` after the blanks
that pad it to the pane's width).  Then no line looks like a record, no traceback starts at a line's start,
and the verdict is lost.  A log copied with the Markdown around it (an issue's source, a chat message) starts
with a code fence (````` or ````` ```text ````` on a line of its own) and has another after its last line,
which would be read as the last line of the log: the exception's message, or the end of a traceback.

``gutter`` recognises a column on a sample (nearly every line with text has it; line numbers must count up,
mostly by one, which a timestamp or ``srun --label``'s task number does not), and fences (the first line with
text is one); ``Ungutter`` strips the column from each line and empties fence lines, chunk by chunk.  The
lines and their count are the file's, so line numbers in the verdict are too (a numbered column's numbers,
where it shows them: the original log's).  The collectors' prefixes the
parser reads line by line (``prefixes.py``: kubectl, docker compose, journalctl, ``srun --label``) are not
gutters.
"""

from __future__ import annotations

import dataclasses
import re
from array import array
from itertools import pairwise

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

#: Lines with text from which a share of them carrying the column is enough (fewer: all must), and the share.
_MIN_LINES = 4
_MIN_SHARE = 0.9
#: Lines of the sample looked at (a gutter is on every line, the first ones show it).
_SAMPLE_LINES = 2000
#: Lines with text a column must be on first, before the whole sample is counted.
_HEAD = 20

#: Quote markers (``> ``, nested ``> > `` or ``>> ``); the space after the last one is the marker's.
_QUOTE = re.compile(rb"[ \t]*>(?:[ \t]?>)*(?: |(?=[\r\n])|$)")
#: pm2's ``id|app  | `` in front of each line of ``pm2 logs``.
_PM2 = re.compile(rb"\d+\|[\w.\-@]+ *\| ")
#: A terminal pane's left side (``│`` U+2502 and one blank), and its right side after the padding blanks.
_SIDE = b"\xe2\x94\x82"
_PANE = re.compile(_SIDE + rb" ?")
#: rich's boxed traceback draws the same sides, but between a top (``╭``) and a bottom (``╰``) corner.
_CORNERS = (b"\xe2\x95\xad", b"\xe2\x95\xb0")
#: A line number and what follows it, by the tool that wrote it.
_NUMBERED = {  # the more specific first: "   1 | " is a viewer's, not less's "   1 " before "| "
    "tab": rb" *(\d+)\t",  # cat -n, nl
    "bar": rb" *(\d+) ?(?:\||\xe2\x94\x82) ?",  # "12 | " or "12 \u2502 " (a viewer's copy)
    "grep": rb"(\d+)[:\-]",  # grep -n: ":" for a matching line, "-" for a context line
    "space": rb" *(\d+) ",  # less -N, an editor's copy
}
_NUMBERED_RE = {name: re.compile(pattern) for name, pattern in _NUMBERED.items()}
#: Numbered forms read on a single line numbered 1 (``cat -n`` of a one-line paste); ``1 `` alone is text.
_ALONE = ("tab", "bar")
#: grep -n's match line numbered 1, alone (``grep -n Error`` of a one-line paste): ``1:`` then text, not a clock.
_GREP_ALONE = re.compile(rb"1:[^\d\s:]")
#: Blanks in front of every line taken for a paste's indentation.
_MIN_INDENT = 2
#: grep's line between two groups of context.
_GREP_SEPARATOR = b"--"


@dataclasses.dataclass(frozen=True)
class Gutter:
    """What was recognised on a sample: the column's kind and pattern (None when there is none) and whether
    the log is in Markdown code fences."""

    kind: str | None
    pattern: re.Pattern[bytes] | None
    fenced: bool = False
    framed: bool = False  # a pane's right side after the text too, taken off

    def note(self, numbers_said: bool = True) -> str:
        """What was taken off, for the user ("" for empty lines before the log only); ``numbers_said``: with
        what line numbers the verdict gives (a column inside this one says that instead)."""
        said = [] if self.kind is None else [f"{_SAID[self.kind]}: read without that column"]
        if self.fenced:
            said.append("in a Markdown code block: read without its fence lines (```)")
        numbers = "the ones its column shows" if self.kind in _NUMBERED else "the file's"
        if said and numbers_said:
            said.append(f"line numbers are {numbers}")
        return "; ".join(said)


_SAID = {"quote": "quoted (\"> \" before every line, as a reply or an e-mail quotes it)",
         "pm2": "prefixed by pm2 (\"id|app | \")", "tab": "numbered (cat -n, nl)",
         "space": "numbered (less -N, an editor's copy)", "grep": "numbered by grep -n",
         "bar": "numbered (\"12 | \", a viewer's copy)",
         "pane": "framed by a terminal pane (\"\u2502 \" before each line, \" \u2502\" after it)",
         "indent": "indented (every line, as a nested code block is)"}
#: A Markdown code fence on a line of its own, with an info string (```` ```text ````) or not.
_FENCE = re.compile(rb"[ \t]*(?:`{3,}|~{3,})[\w+\-.]*[ \t]*\r?")


def _texts(sample: bytes) -> list[bytes]:
    lines = sample.split(b"\n", _SAMPLE_LINES)[:-1]  # the last may be cut
    return [line.rstrip(b"\r") for line in lines if line.strip()]


def _counts_up(numbers: list[int], sparse: bool = False) -> bool:
    """Line numbers: never going back, and one more than the last at least half of the time; ``sparse``
    (``grep -n``'s matches without context): only going up, on three lines or more."""
    steps = [b - a for a, b in pairwise(numbers)]
    if sparse and len(steps) >= 2 and min(steps) > 0:
        return True
    return bool(steps) and min(steps) > 0 and sum(s == 1 for s in steps) * 2 >= len(steps)


def gutter(sample: bytes) -> Gutter | None:
    """The column in front of nearly every line of ``sample`` and the fences around it, when there are."""
    texts = _texts(sample)
    if not texts:
        return None
    found = _column([t for t in texts if _FENCE.fullmatch(t) is None] or texts)  # (fences around a quote: bare)
    first = texts[0] if found is None or found.pattern is None else _stripped(found.pattern, texts[0])
    if _FENCE.fullmatch(first) is not None:
        return Gutter(None, None, True) if found is None else dataclasses.replace(found, fenced=True)
    if found is None and not sample.split(b"\n", 1)[0].strip():
        return Gutter(None, None)  # only empty lines before the log: it is read from its first line with text
    return found


def _stripped(pattern: re.Pattern[bytes], line: bytes) -> bytes:
    m = pattern.match(line)
    return line if m is None else line[m.end():]


def _column(texts: list[bytes]) -> Gutter | None:
    share = _MIN_SHARE if len(texts) >= _MIN_LINES else 1.0  # a short paste: every line has it
    for kind, pattern in (("quote", _QUOTE), ("pm2", _PM2), ("pane", _PANE), *_NUMBERED_RE.items()):
        head = [t for t in texts[:_HEAD] if not (kind == "grep" and t == _GREP_SEPARATOR)]
        if sum(pattern.match(t) is not None for t in head) < share * len(head):
            continue  # (on the first lines: most logs are told apart there)
        if kind in ("quote", "pm2", "pane"):
            if sum(pattern.match(t) is not None for t in texts) >= share * len(texts) and (
                    kind != "pane" or _framed(texts)):
                return Gutter(kind, pattern, framed=kind == "pane")
            continue
        counted = [t for t in texts if not (kind == "grep" and t == _GREP_SEPARATOR)]
        matches = [m for m in map(pattern.match, counted) if m is not None]
        numbers = [int(m.group(1)) for m in matches]
        alone = numbers == [1] and (kind in _ALONE or (kind == "grep" and _GREP_ALONE.match(counted[0]) is not None))
        if len(matches) >= share * len(counted) and (_counts_up(numbers, kind == "grep") or alone):
            return Gutter(kind, pattern)
    return _indent(texts)


def _framed(texts: list[bytes]) -> bool:
    """Both sides of a pane: most lines end with its right side too, and no line is a corner of rich's box."""
    if any(_stripped(_PANE, t).lstrip(b" \t").startswith(_CORNERS) for t in texts):
        return False
    return sum(t.rstrip(b" \t").endswith(_SIDE) for t in texts) >= _MIN_SHARE * len(texts) - 1


def _without_right(line: bytes) -> bytes:
    text = line.rstrip(b" \t\r")
    if not text.endswith(_SIDE):
        return line
    return text[:-len(_SIDE)].rstrip(b" \t") + line[len(line.rstrip(b"\r")):]


def _indent(texts: list[bytes]) -> Gutter | None:
    """Blanks in front of every line (a code block nested in a list, an indented quote): none of a log's own
    record lines starts with one."""
    lead = [t[:len(t) - len(t.lstrip(b" \t"))] for t in texts]
    common = min(lead, key=len)
    while common and not all(b.startswith(common) for b in lead):
        common = common[:-1]
    if len(common) >= _MIN_INDENT or common == b"\t":  # (one tab is a paste's indent, one blank may be a log's)
        return Gutter("indent", re.compile(re.escape(common)))
    return None


class Ungutter(WholeLines):
    """Strips the column from the start of every line (a line without it is kept as it is) and empties the
    fence lines."""

    def __init__(self, found: Gutter) -> None:
        super().__init__()
        self._pattern = found.pattern
        self._framed = found.framed
        self._grep = found.kind == "grep"
        self._fenced = found.fenced
        self._before = True  # no line with text given out yet: an empty line now is skipped
        self.skipped = 0  # empty lines (once fences) before the log's first line with text
        self.emptied_last = 0  # the file's last line, unterminated, was a fence (the text read lacks it)
        # The number a numbered column shows on each line given out (0: none): the original log's line numbers,
        # which the verdict gives (``cat -n``'s, ``grep -n``'s), not the paste's.
        self._shown: array[int] | None = array("q") if found.kind in _NUMBERED else None

    def _lines(self, block: bytes) -> bytes:
        match = None if self._pattern is None else self._pattern.match
        fence = _FENCE.fullmatch if self._fenced else None
        out: list[bytes] = []
        for line in block.split(b"\n")[:-1] if block else ():
            m = None if match is None else match(line)
            if self._shown is not None:
                self._shown.append(int(m.group(1)) if m is not None else 0)
            if m is not None:
                line = line[m.end():]
            elif self._grep and line.rstrip(b"\r") == _GREP_SEPARATOR:
                line = b""  # an empty line: the line count stays the file's
            if self._framed:
                line = _without_right(line)  # (the first line of a cut paste has only this side)
            if fence is not None and line[:1] in b" \t`~" and fence(line) is not None:
                line = b""
            if self._before:
                if not line.strip():  # the log starts at its first line with text (a cut log's line 1)
                    self.skipped += 1
                    if self._shown is not None:
                        self._shown.pop()
                    continue
                self._before = False
            out.append(line)
        return b"\n".join(out) + b"\n" if out else b""

    def _last(self, rest: bytes) -> bytes:
        if not rest:
            return b""
        skipped, text = self.skipped, self._lines(rest + b"\n")[:-1]
        if not text and self.skipped == skipped:  # an unterminated fence, emptied: still a line of the file
            self.emptied_last = 1
        return text

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with the file's line numbers (a numbered column's, where it showed one) and size."""
        skipped, shown = self.skipped, self._shown
        lines = analysis.lines + skipped + self.emptied_last

        def line_of(n: int) -> int:
            if shown is not None and 0 < n <= len(shown) and shown[n - 1]:
                return shown[n - 1]
            return n + skipped

        return analysis.renumbered(line_of, lines, self.read)
