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
recognised by ``pretty_json_key``; only the field's lines give text then.  Python's logging written as JSON (a
JSON formatter in ``VLLM_LOGGING_CONFIG_PATH``, python-json-logger: ``"message"``, and the traceback in
``"exc_info"``, a string or, pretty-printed by ``jq``, an array of strings) gives the message, then the traceback.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.lines import WholeLines

_KEYS = (b"log", b"data", b"MESSAGE", b"textPayload", b"message")
_FIELD = {key: re.compile(rb'"' + key + rb'"\s*:\s*"((?:[^"\\]|\\.)*)"') for key in _KEYS}
#: Python's logging as JSON: the traceback of a record's exception, beside its ``"message"``.
_EXC = rb'"(?:exc_info|exc_text|stack_info)"\s*:\s*'
_EXC_FIELD = re.compile(_EXC + rb'"((?:[^"\\]|\\.)*)"')
_PRETTY_EXC = re.compile(rb"^\s*" + _EXC + rb'(?:"((?:[^"\\]|\\.)*)"|\[\s*$)')
#: A record's level and logger (Python's logging as JSON), given in front of its message as Python's default format
#: writes them (``ERROR:vllm.engine:...``), which the parser reads.
_LEVEL = re.compile(rb'"(?:levelname|level)"\s*:\s*"(debug|info|warning|error|critical)"', re.IGNORECASE)
_NAME = re.compile(rb'"name"\s*:\s*"([\w.\-]+)"')
#: A string alone on its line, in a pretty-printed array (a line of ``"exc_info"``'s), and the array's end.
_PRETTY_ITEM = re.compile(rb'^\s*"((?:[^"\\]|\\.)*)",?\s*$')
_ARRAY_END = re.compile(rb"^\s*\],?\s*$")
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
    if counts[key] >= _MIN_LINES:
        return key
    # (one record of Python's logging, pretty-printed: its message, and its exception's traceback)
    logged = counts[b"message"] and any(_PRETTY_EXC.match(line) is not None for line in lines)
    return b"message" if logged else None


def _text(raw: bytes) -> bytes:
    """A JSON string's content (between its quotes) as UTF-8 bytes."""
    if b"\\" not in raw:
        return raw
    try:
        return str(json.loads(b'"' + raw + b'"')).encode("utf-8", "replace")
    except ValueError:  # a record cut short or damaged: its text as it stands
        return raw


def _ended(text: bytes) -> bytes:
    return text if text.endswith(b"\n") else text + b"\n"


class JsonLines(WholeLines):
    """The text the records of field ``key`` carry, chunk by chunk."""

    def __init__(self, key: bytes, pretty: bool = False) -> None:
        super().__init__()
        self._field = _PRETTY_FIELD[key] if pretty else _FIELD[key]
        self._pretty = pretty  # a line without the field is JSON around it: no text
        self._joins = key == b"log"  # Docker splits a long line into records: only the last ends in "\n"
        self._logging = key == b"message"  # Python's logging: a record's traceback follows its message
        self._in_exc = False  # (pretty) reading the lines of an ``"exc_info"`` array
        # (pretty) the level and the logger read so far of the record being read
        self._level, self._logger = b"", b""
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
            if self._logging and m is None and self._pretty:
                text = self._pretty_line(line)
            elif m is None:
                text = b"" if self._pretty or _record(line) in (b"", b"[", b"]") else line + b"\n"
            else:
                text = _text(m.group(1))
                if not self._joins and not text.endswith((b"\n", b"\r")):
                    text += b"\n"
                if self._logging:
                    text = self._logged(line, text)
            if text:
                out.append(text)
                self._given(text)
        return b"".join(out)

    def _logged(self, line: bytes, text: bytes) -> bytes:
        """A Python logging record's message (``text``) with its level and logger in front, when the record names
        its level, and its exception's traceback after it (one a line: the line holds them)."""
        if self._pretty:
            level, logger = self._level, self._logger
        else:
            lv, nm = _LEVEL.search(line), _NAME.search(line)
            level, logger = (b"" if lv is None else lv.group(1).upper()), (b"" if nm is None else nm.group(1))
            if (x := _EXC_FIELD.search(line)) is not None:
                text += _ended(_text(x.group(1)))
        return level + b":" + (logger or b"root") + b":" + text if level else text

    def _pretty_line(self, line: bytes) -> bytes:
        """A pretty-printed record's line other than its message: its level or logger kept for the message, and the
        text it gives of the record's exception (its ``"exc_info"`` string, or a line of its ``"exc_info"``
        array); else none."""
        if (lv := _LEVEL.search(line)) is not None:
            self._level = lv.group(1).upper()
        elif (nm := _NAME.search(line)) is not None:
            self._logger = nm.group(1)
        elif line.strip() in (b"{", b"[{", b",{"):
            self._level, self._logger = b"", b""
        if self._in_exc:
            if _ARRAY_END.match(line) is not None:
                self._in_exc = False
                return b""
            item = _PRETTY_ITEM.match(line)
            return b"" if item is None else _ended(_text(item.group(1)))
        x = _PRETTY_EXC.match(line)
        if x is None:
            return b""
        if x.group(1) is None:
            self._in_exc = True
            return b""
        return _ended(_text(x.group(1)))

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
