"""A log kept as JSON records, one a line or pretty-printed, read as the text the records carry.

Some collectors store each piece of a process's output as a JSON string: Docker's json-file driver (the file
under ``/var/lib/docker/containers/``: ``{"log":"...\\n","stream":"stderr","time":"..."}``), ``journalctl -o
json`` (``"MESSAGE"``), Google Cloud Logging exports (``"textPayload"``) and Kaggle's notebook log (a JSON
array, ``[{"stream_name":"stderr","time":6.99,"data":"...\\n"}`` then ``,{...}`` a line).  Read as it is,
every line is one long record: no prefix, no traceback, nothing in order.  ``json_key`` recognises the shape
on a sample and names the field; ``JsonLines`` gives the carried text back, joining Docker's pieces of a
long line (a ``log`` string without its ``\\n``), and keeps where each line came from so that line numbers in
the verdict are the file's (``remap``).  A pretty-printed export (the Cloud Logging console's download, ``gcloud
logging read --format=json``: an array of entries over many lines, the field on a line of its own) is
recognised by ``pretty_json_key``; only the field's lines give text then.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

_KEYS = (b"log", b"data", b"MESSAGE", b"textPayload")
_FIELD = {key: re.compile(rb'"' + key + rb'"\s*:\s*"((?:[^"\\]|\\.)*)"') for key in _KEYS}
#: Lines of the sample (with text) needed, and the share of them that must be such records.
_MIN_LINES = 3
_MIN_SHARE = 0.9


def _record(line: bytes) -> bytes:
    """A line without a JSON array's punctuation around its object (``[{...}``, ``,{...}``, ``{...},``)."""
    return line.strip().lstrip(b"[,").rstrip(b",]").strip()


def json_key(sample: bytes) -> bytes | None:
    """The field whose string carries the text, when nearly every line of ``sample`` is a JSON record with it."""
    if not any(_record(line).startswith(b"{") for line in sample[:4096].split(b"\n")[:6]):
        return None  # no record among the first lines: not this shape (the rest need not be looked at)
    lines = [r for r in (_record(line) for line in sample.split(b"\n")[:-1]) if r]  # the last may be cut
    records = [r for r in lines if r.startswith(b"{") and r.endswith(b"}")]
    if len(records) < _MIN_LINES or len(records) < _MIN_SHARE * len(lines):
        return None
    for key, field in _FIELD.items():
        if sum(field.search(r) is not None for r in records) >= _MIN_SHARE * len(records):
            return key
    return None


#: A line of pretty-printed JSON: a member (``"key": ...``), a string in an array, or brackets alone.
_PRETTY_LINE = re.compile(rb'\s*(?:"(?:[^"\\]|\\.)*"\s*[:,]?|[\[\]{}]+,?\s*$|[-\d.eE+]+,?\s*$|(?:true|false|null),?\s*$)')
_PRETTY_FIELD = {key: re.compile(rb'^\s*"' + key + rb'"\s*:\s*"((?:[^"\\]|\\.)*)"') for key in _KEYS}


def pretty_json_key(sample: bytes) -> bytes | None:
    """The field whose string carries the text when ``sample`` is pretty-printed JSON (an array of entries,
    one member a line) with that field on several lines, else None."""
    if sample.lstrip()[:1] not in (b"[", b"{"):
        return None
    lines = [line for line in sample.split(b"\n")[:-1] if line.strip()]  # the last may be cut
    if len(lines) < _MIN_LINES or sum(_PRETTY_LINE.match(line) is not None for line in lines) < _MIN_SHARE * len(lines):
        return None
    counts = {key: sum(field.match(line) is not None for line in lines) for key, field in _PRETTY_FIELD.items()}
    key = max(counts, key=lambda k: counts[k])
    return key if counts[key] >= _MIN_LINES else None


def _text(raw: bytes) -> bytes:
    """A JSON string's content (between its quotes) as UTF-8 bytes."""
    if b"\\" not in raw:
        return raw
    try:
        return str(json.loads(b'"' + raw + b'"')).encode("utf-8", "replace")
    except ValueError:  # a record cut short or damaged: its text as it stands
        return raw


class JsonLines(WholeLines):
    """The text the records of field ``key`` carry, chunk by chunk."""

    def __init__(self, key: bytes, pretty: bool = False) -> None:
        super().__init__()
        self._field = _PRETTY_FIELD[key] if pretty else _FIELD[key]
        self._pretty = pretty  # a line without the field is JSON around it: no text
        self._joins = key == b"log"  # Docker splits a long line into records: only the last ends in "\n"
        self._in = 0  # file lines read
        self._out = 0  # lines given out (ended in "\n")
        self._open = False  # the last line given out has no "\n" yet
        # Where the file's line number of a given-out line stops being its own plus the last offset: the
        # given-out line numbers (1-based) and the offsets from then on.
        self._at: list[int] = []
        self._offset: list[int] = []

    def _lines(self, block: bytes) -> bytes:
        out: list[bytes] = []
        lines = block.split(b"\n") if block else []
        if block.endswith(b"\n"):
            lines.pop()
        for line in lines:
            self._in += 1
            m = self._field.search(line)
            if m is None:
                text = b"" if self._pretty or _record(line) in (b"", b"[", b"]") else line + b"\n"
            else:
                text = _text(m.group(1))
                if not self._joins and not text.endswith((b"\n", b"\r")):
                    text += b"\n"
            if text:
                out.append(text)
                self._given(text)
        return b"".join(out)

    def _given(self, text: bytes) -> None:
        """Count the lines ``text`` (from the file's line ``self._in``) starts and ends."""
        if not self._open:
            self._starts(self._out + 1)
        ends = text.count(b"\n")
        for n in range(2, ends + 1):  # lines after the first that ``text`` holds whole start on this file line
            self._starts(self._out + n)
        self._out += ends
        self._open = not text.endswith(b"\n")
        if self._open and ends:
            self._starts(self._out + 1)

    def _starts(self, line_no: int) -> None:
        offset = self._in - line_no
        if (self._offset[-1] if self._offset else 0) != offset:
            self._at.append(line_no)
            self._offset.append(offset)

    def file_line(self, line_no: int) -> int:
        """The file's line number (1-based) of given-out line ``line_no``: the record it started in."""
        i = bisect_right(self._at, line_no) - 1
        return line_no + (self._offset[i] if i >= 0 else 0)

    def remap(self, analysis: Analysis) -> Analysis:
        """``analysis`` with line numbers and sizes of the file, not of the text read."""
        return analysis.renumbered(self.file_line, self._in, self.read)
