"""The last lines of a log, kept while parsing: the evidence of a failure that printed no exception.

A job that writes ``error: something bad`` and exits 3 leaves no traceback; what the user needs then is
the log's last lines, as a terminal would have shown them.  ``LogTail`` keeps them bounded (``KEEP`` lines
of at most ``LINE_CHARS`` characters) at a cost of a few ``rfind`` per chunk, whatever the chunk's size.

Lines end at ``\\n``; within a line, ``\\r`` separates tqdm frames (and ends vLLM's continuation lines), so a
line shows its last non-empty ``\\r`` segment, as a terminal does.  Blank lines are skipped.  Text is
decoded as UTF-8 (replacing errors) with ANSI sequences and other control characters removed: it is
printed as evidence and must be inert.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from orchestrator.logparse.inert import inert_line
from orchestrator.logparse.prefixes import MAIN, parse_line

#: Lines kept, and characters kept of each.
KEEP = 20
LINE_CHARS = 500
_CARRY_CAP = 4 * LINE_CHARS

_ERROR_RE = re.compile(r"(?i)(?:^|[\s:\[(])(?:error|fatal|exception|critical)\b|\bfailed\b|\babort")


def shown_line(raw: bytes) -> str | None:
    """What a terminal shows of one ``\\n``-terminated line (without the ``\\n``), or None for a blank."""
    for seg in reversed(raw.split(b"\r")):
        text = inert_line(seg[: LINE_CHARS * 4].decode("utf-8", "replace")).rstrip()
        if text:
            return text[:LINE_CHARS] + ("…" if len(text) > LINE_CHARS else "")
    return None


def first_error_line(lines: list[str] | tuple[str, ...]) -> str | None:
    """The first of ``lines`` that reads like an error (``error: …``, ``FATAL``, ``… failed``)."""
    return next((line for line in lines if _ERROR_RE.search(line)), None)


class LogTail:
    """The last ``KEEP`` shown lines of everything fed."""

    def __init__(self, lines: list[str] | None = None) -> None:
        self._lines: deque[str] = deque(lines or (), maxlen=KEEP)
        self._carry = b""  # the unterminated end of what was fed (capped: only its start is shown)

    @property
    def lines(self) -> list[str]:
        """The kept lines, oldest first, and the unterminated last line if any."""
        last = shown_line(self._carry) if self._carry else None
        return [*self._lines, last] if last else list(self._lines)

    def feed(self, chunk: bytes) -> None:
        last_lf = chunk.rfind(b"\n")
        if last_lf < 0:
            if len(self._carry) < _CARRY_CAP:
                self._carry += chunk[: _CARRY_CAP - len(self._carry)]
            return
        found: list[str] = []
        end = last_lf
        while len(found) < KEEP and end >= 0:
            start = chunk.rfind(b"\n", 0, end) + 1
            raw = chunk[start:end] if start else self._carry + chunk[:end]
            line = shown_line(raw[-_CARRY_CAP:] if len(raw) > _CARRY_CAP else raw)
            if line:
                found.append(line)
            end = start - 1
        if len(found) >= KEEP:
            self._lines.clear()
        self._lines.extend(reversed(found))
        rest = chunk[last_lf + 1:]
        self._carry = rest[:_CARRY_CAP]

    def take_back(self, raw: bytes) -> bool:
        """Forget ``raw``, the end of what was fed (an unterminated line given back to be fed again), when the
        carry holds it whole; False, changing nothing, when it does not."""
        if len(self._carry) >= _CARRY_CAP or not self._carry.endswith(raw):
            return False
        self._carry = self._carry[:len(self._carry) - len(raw)]
        return True

    def finish(self) -> None:
        """The stream ended: an unterminated last line becomes a line."""
        line = shown_line(self._carry) if self._carry else None
        if line:
            self._lines.append(line)
        self._carry = b""

    def to_json(self, fed_again: int = 0) -> list[str] | dict[str, Any]:
        """The complete lines, and the start of the unterminated one that will not be fed again after a restore
        (``fed_again``: the bytes of its end the parser has not read: a line the parser ended at a ``\\r``, whose
        ``\\n`` is still to come, is the tail's unterminated one)."""
        kept = len(self._carry) - fed_again
        if kept <= 0 or len(self._carry) >= _CARRY_CAP:
            return list(self._lines)
        return {"lines": list(self._lines), "carry": self._carry[:kept].decode("latin-1")}

    @classmethod
    def from_json(cls, data: Any) -> LogTail:
        if isinstance(data, dict):
            tail = cls([str(x) for x in data.get("lines") or []])
            tail._carry = str(data.get("carry") or "").encode("latin-1")
            return tail
        return cls([str(x) for x in data] if isinstance(data, list) else None)


def failure_evidence(snapshot: dict[str, Any] | None, lines_before: int = 0) -> dict[str, Any]:
    """What a run's log shows when it failed without an exception, from the parser's stored snapshot.

    ``first_error_line``: the parser's first error record of the whole log (``ERROR …``), else the first
    error-like line of the tail (``error: …``, ``… failed``); ``log_tail``: the log's last lines.
    ``lines_before``: the log's lines before the snapshot's run (``runs.lines_before``).
    """
    snap = snapshot or {}
    tail = LogTail.from_json(snap.get("tail")).lines
    first = (snap.get("evidence") or {}).get("first_error") or {}
    line: str | None = None
    if first.get("message") or first.get("exception"):
        text = ": ".join(str(x) for x in (first.get("exception"), first.get("message")) if x)
        line = inert_line(text)[:LINE_CHARS]
        if first.get("line_no"):  # numbered in its run: the runs before it in the log come first
            line = f"line {int(first['line_no']) + lines_before}: {line}"
    return {"first_error_line": line or first_error_line(tail), "log_tail": tail}


def outlived_its_workers(tail: list[str]) -> bool:
    """Whether the log's last line with text is the main process's own (not an error), written after its
    workers said it had exited: it lived on to write it, so it ended on its own (a script's ``Saved to ...``
    after vLLM's workers' ``Parent process exited, terminating worker``).  A process killed cannot write on."""
    texts = [text for text in tail if text.strip()]
    if len(texts) < 2 or not any("Parent process exited" in text for text in texts[:-1]):
        return False
    last = parse_line(texts[-1])
    return (last.process == MAIN and last.level not in ("ERROR", "CRITICAL")
            and not any(word in last.message for word in ("Error", "Traceback", "Killed", "error:")))
