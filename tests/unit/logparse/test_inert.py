"""logparse.inert: a job's or a user's text can no longer act on a terminal."""

from __future__ import annotations

import pytest

from orchestrator.logparse.inert import InertStream, inert, inert_line
from orchestrator.logparse.lines import decode

# What a hostile job line can carry, each with the text a reader should still see around it.
ATTACKS = {
    "osc52 clipboard (BEL)": "a\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07b",
    "osc52 clipboard (ST)": "a\x1b]52;c;Y3VybA==\x1b\\b",
    "osc2 title": "a\x1b]2;pwned\x07b",
    "ESC c reset": "a\x1bcb",
    "ESC #8 screen fill": "a\x1b#8b",
    "ESC (0 line drawing": "a\x1b(0b",
    "ESC 7 save cursor": "a\x1b7b",
    "csi colour": "a\x1b[1;31mb",
    "csi cursor up + erase": "a\x1b[2A\x1b[2Kb",
    "c1 csi": "a\x9b31mb",
    "c1 osc": "a\x9d2;pwned\x9cb",
    "c1 dcs": "a\x90qpayload\x9cb",
    "c1 next-line": "a\x85b",
    "bel backspace del nul": "a\x07\x08\x7f\x00b",
    "apc": "a\x1b_payload\x1b\\b",
    "unterminated osc stops at the line end": "a\x1b]2;pwned\nb",
}


class TestInert:
    @pytest.mark.parametrize("name", sorted(ATTACKS))
    def test_sequence_removed_whole(self, name: str) -> None:
        """No ESC, control or C1 character is left, and nothing of the sequence shows up as text."""
        out = inert(ATTACKS[name])
        assert out in ("ab", "a\nb"), repr(out)

    def test_plain_text_tabs_and_newlines_kept(self) -> None:
        """Printable text, brackets, tabs and newlines (a traceback) are unchanged."""
        text = 'Traceback (most recent call last):\n\tFile "x.py", line 3\n[alerts] ünïcode ✓'
        assert inert(text) == text

    def test_inert_line_is_one_line(self) -> None:
        """A table cell or a title gets no line break or tab either."""
        assert inert_line("a\tb\nc\rd\x1b]2;x\x07") == "abcd"

    def test_decode_of_a_log_line_is_inert(self) -> None:
        """The parser's decode (root causes, tracebacks, `log analyze`) drops every sequence, C1 included."""
        raw = "boom \x1bc\x1b#8\x1b(0\x9b2J\x1b]52;c;eA==\x07done\ttab".encode()
        assert decode(raw) == "boom done\ttab"


class TestInertStream:
    def test_any_chunking_gives_the_same_bytes(self) -> None:
        """A sequence or a UTF-8 character cut by a read boundary is held back, never half-shown."""
        data = "".join(ATTACKS.values()).encode() + "é✓\r\n tail".encode()
        whole = inert("".join(ATTACKS.values()) + "é✓\r\n tail", keep="\t\n\r").encode()
        for cut in range(len(data) + 1):
            stream = InertStream()
            assert stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.flush() == whole, cut

    def test_invalid_utf8_is_replaced(self) -> None:
        """Bytes that are not UTF-8 (an 8-bit C1 among them) come out as U+FFFD."""
        stream = InertStream()
        assert (stream.feed(b"a\x9bb\xff") + stream.flush()).decode() == "a\ufffdb\ufffd"

    def test_progress_bar_frames_keep_their_carriage_returns(self) -> None:
        """`\\r` separates tqdm frames in a raw log; it moves the cursor only within the line."""
        stream = InertStream()
        assert stream.feed(b"10%\r20%\r\n") == b"10%\r20%\r\n"
