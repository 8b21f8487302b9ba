"""Text from a job or a user, made inert for a terminal: no escape sequence, no control character.

A job's log is partly attacker-controlled (vLLM logs carry request text), and so are run names and
commands. A terminal acts on what it is sent: OSC 52 sets the clipboard, OSC 2 the window title, ``ESC c``
resets the screen, ``ESC (0`` switches to line drawing, ``ESC #8`` fills the screen, and a C1 ``CSI``
(U+009B) is an ``ESC [``. ``inert`` removes whole sequences (so no ``[31m`` is left behind) and then every
other C0, DEL and C1 character; the colours eorch shows are added afterwards, by eorch.

Pure: values in, values out. ``InertStream`` does the same to a byte stream cut anywhere (``eorch logs``).
"""

from __future__ import annotations

import codecs
import re

# ESC- and C1-introduced sequences (ECMA-48): CSI, control strings (OSC, DCS, SOS, PM, APC) up to their
# terminator (or the end of the line: an unterminated one never swallows the next line), and the
# two-or-more-character escapes (nF like ``ESC (0`` / ``ESC #8``, Fp/Fe/Fs like ``ESC 7`` / ``ESC c``).
_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
_STRING_START = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*"
_STRING_END = r"(?:\x07|\x1b\\|\x9c)"
_ESCAPE = r"\x1b[ -/]*[0-~]"
_ESCAPE_DONE = r"\x1b(?:[ -/]+[0-~]|[0-OQ-WYZ\\`-~])"  # not the first two characters of a CSI or a string
_SEQUENCE = re.compile(f"{_CSI}|{_STRING_START}{_STRING_END}?|{_ESCAPE}")
_COMPLETE = re.compile(f"{_CSI}|{_STRING_START}(?:{_STRING_END}|(?=\\n))|{_ESCAPE_DONE}")
_INTRODUCERS = ("\x1b", "\x9b", "\x90", "\x98", "\x9d", "\x9e", "\x9f")
#: Every C0 control, DEL and C1 control; the ones a caller keeps (tab, newline) are taken out per call.
_CONTROLS = "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)))
_HOLD_MAX = 4096  # an escape sequence longer than this is not waited for


def _control_re(keep: str) -> re.Pattern[str]:
    return re.compile("[" + re.escape("".join(c for c in _CONTROLS if c not in keep)) + "]")


_STRIP = {keep: _control_re(keep) for keep in ("", "\t", "\t\n", "\t\n\r")}


def inert(text: str, keep: str = "\t\n") -> str:
    """``text`` without escape sequences or control characters, except those in ``keep``.

    ``keep`` is one of ``""``, ``"\\t"``, ``"\\t\\n"`` (the default: multi-line text such as a traceback)
    or ``"\\t\\n\\r"`` (a raw log, whose ``\\r`` separates progress-bar frames).
    """
    if text.isprintable():  # the common case, one C-speed pass
        return text
    strip = _STRIP.get(keep) or _control_re(keep)
    if strip.search(text) is None:  # only kept controls (a tab): nothing to take out, no sequence either
        return text
    return strip.sub("", _SEQUENCE.sub("", text))


def inert_line(text: str) -> str:
    """One line of text for a table cell or a title: also no tab or line break."""
    return inert(text, keep="")


class InertStream:
    """``inert`` over a byte stream cut at arbitrary points: UTF-8 decoded (invalid bytes replaced), an
    escape sequence cut by a chunk boundary held back until it is complete. Output is UTF-8."""

    def __init__(self, keep: str = "\t\n\r") -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        self._keep = keep

    def feed(self, data: bytes) -> bytes:
        text = self._held + self._decoder.decode(data)
        cut = _complete_prefix(text)
        self._held = text[cut:]
        return inert(text[:cut], self._keep).encode()

    def flush(self) -> bytes:
        text = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        return inert(text, self._keep).encode()


def _complete_prefix(text: str) -> int:
    """Length of the part of ``text`` that cannot be the start of an escape sequence still arriving."""
    start = max(text.rfind(c) for c in _INTRODUCERS)
    if start < 0 or len(text) - start > _HOLD_MAX or _COMPLETE.match(text, start):
        return len(text)
    return start
