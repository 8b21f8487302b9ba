"""The one line splitter of the log views (``orchestrator.logparse.shown``): bytes cut anywhere, lines out."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.logparse.shown import ShownLines, shown_line

LOG = (b"INFO start\n"
       b"\x1b[1;36m(EngineCore pid=1)\x1b[0;0m INFO up\r\n"
       b"Loading shards:   0%\rLoading shards: 100%\n"
       b"a\ttab\n"
       b"\n"
       b"\x1b]52;c;ZXZpbA==\x07clipboard\n"
       b"tail without end")
WANT = ["INFO start", "(EngineCore pid=1) INFO up", "Loading shards: 100%", "a   tab", "", "clipboard"]


class TestShownLine:
    def test_last_carriage_return_frame_and_no_escape(self) -> None:
        """A progress bar shows its last frame; escape sequences and controls are gone."""
        assert shown_line(b"\x1b[31m0%\r50%\r100%\r") == "100%"
        assert shown_line("bell\x07 and \x9b31m C1".encode()) == "bell and  C1"


class TestShownLines:
    def test_whole_lines_and_offset(self) -> None:
        """Whole lines come out; the offset stops after the last newline; finish gives the rest."""
        split = ShownLines()
        assert split.feed(LOG) == WANT
        assert split.offset == LOG.rfind(b"\n") + 1
        assert split.finish() == ["tail without end"] and split.offset == len(LOG)

    @given(st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=12))
    def test_any_chunking_gives_the_same_lines(self, cuts: list[int]) -> None:
        """Cut anywhere (inside an escape sequence, between \\r and \\n), the lines and offset are the same."""
        bounds = [0, *sorted(cuts), len(LOG)]
        split = ShownLines()
        lines = [line for a, b in itertools.pairwise(bounds) for line in split.feed(LOG[a:b])]
        assert lines == WANT and split.offset == LOG.rfind(b"\n") + 1

    def test_starting_inside_a_line_skips_it(self) -> None:
        """A tail read from the middle of a log drops the partial first line and counts its bytes."""
        start = LOG.index(b"INFO start") + 3
        split = ShownLines(start, skip_partial=True)
        assert split.feed(LOG[start:]) == WANT[1:]
        assert split.offset == LOG.rfind(b"\n") + 1

    def test_a_huge_line_is_capped_but_counted(self) -> None:
        """A line with no end for megabytes is kept short; the offset still counts every byte."""
        split = ShownLines()
        for _ in range(64):
            assert split.feed(b"x" * 65536) == []
        (line,) = split.feed(b"y\n")
        assert len(line) <= 16 * 1024 and split.offset == 64 * 65536 + 2
