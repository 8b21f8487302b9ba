"""Whole-file analysis: read a log in large chunks through one ``LogParser``.

A log pasted from a terminal may have its long lines hard-wrapped: they are joined again (``unwrap``); one
with an empty line after every line (some web pages and chat clients) is read without them (``spacing``); one
whose line breaks were lost is split at its records again (``resplit``), or at a terminal's width where its
rows were padded with blanks (``padded``). A
log that several tries were appended to is read run by run, the verdict being the last one's (``runs``). A
rotated or archived log is often compressed (``logrotate``'s ``.gz``, an ``.xz`` attached to an issue): gzip,
bzip2 and xz are read transparently, recognised by their first bytes (not the file's name).  A log written
as UTF-16 (Windows PowerShell's ``>`` and ``Out-File``: a byte-order mark, then two bytes a character) is
read as the UTF-8 it would have been.
"""

from __future__ import annotations

import bz2
import codecs
import dataclasses
import gzip
import io
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.csvquoted import Unquoter, quoted_lines
from orchestrator.logparse.escapes import DROPPED, Unescaper, shown_escapes, shown_returns
from orchestrator.logparse.gutter import Ungutter, gutter
from orchestrator.logparse.jsonlines import JsonLines, json_key, pretty_json_key
from orchestrator.logparse.padded import Repadder, padded_width
from orchestrator.logparse.resplit import Resplitter, joined_records
from orchestrator.logparse.reverse import Reverser, newest_first
from orchestrator.logparse.runs import RunSplitter
from orchestrator.logparse.spacing import Undoubler, double_spaced, stamp_lines
from orchestrator.logparse.unwrap import Unwrapper, wrap_width

#: Read size for offline analysis: large enough for the funnel to pay off, small enough for bounded memory.
CHUNK = 8 * 1024 * 1024
#: The least of a log's start read before deciding how to read it (compressed? hard-wrapped?).
SAMPLE = 1024 * 1024


#: First bytes of the compressed formats read transparently, and of one that is not (zstd: not in the stdlib).
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}
_ZSTD = b"\x28\xb5\x2f\xfd"
#: Byte-order marks of the UTF-16 a log may have been written in.
_UTF16 = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be"}


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Reshaper(Protocol):
    """Gives the log back as it was before something reshaped it on its way (``Unwrapper``, ``Undoubler``,
    ``Resplitter``)."""

    def feed(self, chunk: bytes) -> bytes: ...
    def finish(self) -> bytes: ...
    def remap(self, analysis: Analysis) -> Analysis: ...


class CompressedLogError(OSError):
    """A compressed log that cannot be read: a format not supported, or the data is damaged."""


def compression(head: bytes) -> str | None:
    """``gzip``, ``bzip2`` or ``xz`` when ``head`` (a stream's first bytes) starts that format, else None;
    raises ``CompressedLogError`` for zstd."""
    if head.startswith(_ZSTD):
        raise CompressedLogError("zstd-compressed: decompress it first (zstd -d), or pipe it: "
                                 "zstdcat FILE | eorch log analyze -")
    return next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)


def analyze_path(path: str | Path, chunk_size: int = CHUNK, notes: list[str] | None = None) -> Analysis:
    """Parse a whole file (as ``analyze_stream`` reads it); raises OSError when it cannot be read."""
    with open(path, "rb") as fh:
        return analyze_stream(fh, chunk_size, notes)


def analyze_stream(stream: Readable, chunk_size: int = CHUNK, notes: list[str] | None = None) -> Analysis:
    """Parse everything an open binary stream gives until its end (a pipe: ``kubectl logs POD | …``),
    decompressed when it is gzip, bzip2 or xz, and put back together when a terminal hard-wrapped its lines
    (``unwrap``: said in ``notes``; line numbers stay the file's)."""
    first = stream.read(max(chunk_size, SAMPLE))  # what the format and a wrap are recognised on
    kind = compression(first)
    if kind is not None:
        inner = _decompressed(first, stream, kind)
        a = analyze_stream(inner, chunk_size, notes)
        if inner.cut and notes is not None:
            notes.append(f"the {kind} data is cut short (no end marker: a file copied while it was written?): read as "
                         "far as it goes")
        return a
    encoding = next((enc for bom, enc in _UTF16.items() if first.startswith(bom)), None)
    if encoding is not None:
        text = _Utf8(first[2:], stream, encoding)
        a = analyze_stream(text, chunk_size, notes)
        if notes is not None:
            notes.append("UTF-16 text (Windows PowerShell's > writes it): read as UTF-8; sizes are the file's")
        return dataclasses.replace(a, bytes=text.size)
    parser = RunSplitter()
    reshaper, noted = _reshaper(first[:SAMPLE])
    chunk = first
    while chunk:
        parser.feed(chunk if reshaper is None else reshaper.feed(chunk))
        chunk = stream.read(chunk_size)
    if reshaper is None:
        parser.finish()
        return parser.analysis()
    parser.feed(reshaper.finish())
    parser.finish()
    note = noted()
    if notes is not None and note:
        notes.append(note)
    return reshaper.remap(parser.analysis())


def _reshaper(sample: bytes) -> tuple[Reshaper | None, Callable[[], str]]:
    """What puts the log back together, when the sample shows it was reshaped, and what says so (once the log is
    read).  A column in front of every line (``gutter``) is taken off first, then colour codes written out as
    text are made codes again (``escapes``), then a newest-first order undone (``reverse``); the rest is
    recognised on what is left."""
    stages: list[Reshaper] = []
    said: list[Callable[[], str]] = []
    found = gutter(sample)
    if found is not None:
        sample = _through(Ungutter(found), sample)
        stages.append(Ungutter(found))
        within = gutter(sample) if found.kind is not None else None
        if within is not None and within.kind is not None:  # a second column inside the first (a reply quoting
            sample = _through(Ungutter(within), sample)  # a numbered paste: ``>  59 KeyError: ...``)
            stages.append(Ungutter(within))
            outer, column = found, within
            said.append(lambda: f"{outer.note(numbers_said=False)}; {column.note()}")
        else:
            said.append(found.note)
    if quoted_lines(sample):
        sample = _through(Unquoter(), sample)
        stages.append(Unquoter())
        said.append(lambda: "exported as CSV (each line a field in double quotes): read without the quoting")
    spelling, returns = shown_escapes(sample), shown_returns(sample)
    # Codes that lost their escape byte were text where the log was reshaped (a web page's rows wrapped with them):
    # they are made codes again last.
    dropped = spelling == DROPPED
    if dropped:
        spelling = None
        said.append(lambda: "colour codes without their escape byte ([1;36m), as a copy from a web page leaves "
                            "them: read as colour codes")
    if spelling is not None or returns:
        sample = _through(Unescaper(spelling, returns), sample)
        stages.append(Unescaper(spelling, returns))
        shown = [f"colour codes ({spelling.decode()}[1;36m)" if spelling is not None else "",
                 f"carriage returns ({returns.decode()})" if returns else ""]
        said.append(lambda: f"{' and '.join(filter(None, shown))} written out as text, as less, cat -v or rsyslog "
                            "show them: read as the bytes they stand for")
    if newest_first(sample):
        sample = _through(Reverser(), sample)
        reverser = Reverser()
        stages.append(reverser)
        said.append(reverser.note)
    inner, note = _reshaped(sample)
    if inner is not None:
        stages.append(inner)
    if dropped:
        stages.append(Unescaper(DROPPED))
    reshaper = None
    for stage in reversed(stages):
        reshaper = stage if reshaper is None else _Chained(stage, reshaper)
    return reshaper, lambda: _said_once("; ".join(filter(None, [*(say() for say in said), note])))


_SAME_LINES = "; line numbers are the file's"


def _said_once(notes: str) -> str:
    """Notes of two reshapings say once, at the end, that line numbers are the file's."""
    return notes.replace(_SAME_LINES, "") + _SAME_LINES if notes.count(_SAME_LINES) > 1 else notes


def _through(reshaper: Reshaper, sample: bytes) -> bytes:
    """The sample as ``reshaper`` gives it back (to recognise what else happened to it)."""
    return reshaper.feed(sample) + reshaper.finish()


def _reshaped(sample: bytes) -> tuple[Reshaper | None, str]:
    key = json_key(sample)
    logging = ("Python's logging as JSON records{}: read as their \"message\" and their exception's traceback "
               "(\"exc_info\"); line numbers are the file's")
    if key is not None:
        if key == b"message":
            return JsonLines(key), logging.format(", one a line")
        return JsonLines(key), (f"JSON records, one a line (a collector's: Docker's json-file, journalctl -o json, "
                                f"Kaggle's): read as the text of their \"{key.decode()}\" field; line numbers are the file's")
    key = pretty_json_key(sample)
    if key is not None:
        if key == b"message":
            return JsonLines(key, pretty=True), logging.format(", pretty-printed (jq's)")
        return JsonLines(key, pretty=True), (f"pretty-printed JSON entries (a log export, such as Cloud Logging's download): "
                                             f"read as the text of their \"{key.decode()}\" fields; line numbers are the file's")
    if double_spaced(sample):
        return Undoubler(), ("double-spaced (every line followed by an empty one): read without those empty lines; "
                             "line numbers are the file's")
    stamps = stamp_lines(sample)
    if stamps is not None:
        return Undoubler(stamps), ("a log viewer's line (time and source) between every two of its lines: read "
                                   "without those lines; line numbers are the file's")
    if joined_records(sample):
        return Resplitter(), ("its line breaks were lost (many records on one line): split before each record "
                              "header; line numbers are the file's")
    padded = padded_width(sample)
    if padded is not None:
        return Repadder(padded), (f"rows padded with blanks to {padded} columns, line breaks lost (a terminal's copy): "
                                  "split at that width again; line numbers are the file's")
    wrapping = wrap_width(sample)
    if wrapping is None:
        return None, ""
    return Unwrapper(wrapping), (f"hard-wrapped at {wrapping.width} columns (a terminal's copy): its rows of that "
                                 "width were joined to the next; line numbers are the file's")


class _Chained:
    """Two reshapers, the text one gives back read by the other."""

    def __init__(self, outer: Reshaper, inner: Reshaper) -> None:
        self._outer, self._inner = outer, inner

    def feed(self, chunk: bytes) -> bytes:
        return self._inner.feed(self._outer.feed(chunk))

    def finish(self) -> bytes:
        return self._inner.feed(self._outer.finish()) + self._inner.finish()

    def remap(self, analysis: Analysis) -> Analysis:
        return self._outer.remap(self._inner.remap(analysis))


def _decompressed(first: bytes, rest: Readable, kind: str) -> _Checked:
    whole: Any = _Rejoined(first, rest)  # a file object as far as the decompressors read it
    if kind == "gzip":
        return _Checked(gzip.GzipFile(fileobj=whole, mode="rb"), kind)
    return _Checked(bz2.BZ2File(whole) if kind == "bzip2" else lzma.LZMAFile(whole), kind)


class _Rejoined:
    """A stream whose first bytes were already read: them, then the rest (``read`` only)."""

    def __init__(self, first: bytes, rest: Readable) -> None:
        self._first, self._rest = first, rest

    def read(self, size: int = -1) -> bytes:
        if not self._first:
            return self._rest.read(size)
        cut = len(self._first) if size < 0 else size
        out, self._first = self._first[:cut], self._first[cut:]
        return out


class _Utf8:
    """A UTF-16 stream (its byte-order mark read) given as UTF-8; ``size`` counts the bytes read from it."""

    def __init__(self, first: bytes, rest: Readable, encoding: str) -> None:
        self._first, self._rest = first, rest
        self._decoder = codecs.getincrementaldecoder(encoding)("replace")
        self.size = 2 + len(first)

    def read(self, size: int = -1) -> bytes:
        while True:
            if self._first:
                raw, self._first = self._first, b""
            else:
                raw = self._rest.read(size)
                self.size += len(raw)
            text = self._decoder.decode(raw, final=not raw)
            if text or not raw:
                return text.encode("utf-8")


class _Checked:
    """A decompressing stream whose errors (damaged data) are one ``CompressedLogError``; data cut short (no end
    marker: a file copied while it was written, a partial download) ends where it was cut, and ``cut`` says so."""

    def __init__(self, inner: Readable, kind: str) -> None:
        self._inner, self._kind = inner, kind
        self.cut = False

    def read(self, size: int = -1) -> bytes:
        if self.cut:
            return b""
        read1 = getattr(self._inner, "read1", self._inner.read)  # (a whole read would lose what came before a cut)
        parts: list[bytes] = []
        got = 0
        try:
            while size < 0 or got < size:
                part = read1(size - got if size >= 0 else -1)
                if not part:
                    break
                parts.append(part)
                got += len(part)
        except EOFError:
            self.cut = True
        except (OSError, lzma.LZMAError, ValueError) as err:
            raise CompressedLogError(f"damaged {self._kind} data ({err})") from None
        return b"".join(parts)


def analyze_bytes(data: bytes, notes: list[str] | None = None) -> Analysis:
    """Parse a complete log held in memory (as ``analyze_stream`` reads it)."""
    return analyze_stream(io.BytesIO(data), max(len(data), 1), notes)
