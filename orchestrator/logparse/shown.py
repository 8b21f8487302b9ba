"""A log's lines as a screen shows them, from bytes cut anywhere: the one line splitter of the log views.

A shown line ends at ``\\n``; within it, ``\\r`` separates tqdm frames (and ends vLLM's continuation lines),
so it shows its last non-empty ``\\r`` segment, as a terminal does.  Text is made inert by
``logparse.inert`` (the one escape-sequence regex), tabs expanded.  ``ShownLines`` keeps the byte offset
just past the last whole line, so a consumer can resume or de-duplicate by offset.

Pure: bytes in, strings and offsets out.
"""

from __future__ import annotations

from orchestrator.logparse.lines import LINE_CAP, decode

TAB_SIZE = 4


def shown_line(raw: bytes) -> str:
    """One display line from the bytes of a line without its ``\\n``."""
    raw = raw.rstrip(b"\r")
    if b"\r" in raw:
        raw = next((seg for seg in reversed(raw.split(b"\r")) if seg), b"")
    return decode(raw).expandtabs(TAB_SIZE)


class ShownLines:
    """Splits a stream into shown lines; ``offset`` is the absolute byte offset after the last whole line.

    ``skip_partial``: the stream starts at ``offset`` somewhere inside a line (a tail read from the middle
    of a log); the bytes up to the first ``\\n`` are dropped.
    """

    def __init__(self, offset: int = 0, *, skip_partial: bool = False) -> None:
        self.offset = offset
        self._skip = skip_partial and offset > 0
        self._pending = b""
        self._pending_len = 0  # bytes of the unfinished line, kept or not (a line is kept up to LINE_CAP*2)

    def feed(self, chunk: bytes) -> list[str]:
        """The lines ``chunk`` completed."""
        end = chunk.rfind(b"\n")
        if end < 0:
            self._hold(chunk)
            return []
        raws = chunk[:end].split(b"\n")
        raws[0] = self._pending + raws[0]
        first_len = self._pending_len + len(raws[0]) - len(self._pending)
        self.offset += first_len + 1 + sum(len(r) + 1 for r in raws[1:])
        self._pending, self._pending_len = b"", 0
        self._hold(chunk[end + 1 :])
        if self._skip:
            raws, self._skip = raws[1:], False
        return [shown_line(r) for r in raws]

    def finish(self) -> list[str]:
        """The stream ended: its unterminated last line, if any."""
        if not self._pending_len or self._skip:
            return []
        line = shown_line(self._pending)
        self.offset += self._pending_len
        self._pending, self._pending_len = b"", 0
        return [line]

    def _hold(self, rest: bytes) -> None:
        self._pending_len += len(rest)
        room = 2 * LINE_CAP - len(self._pending)
        if room > 0:
            self._pending += rest[:room]
