"""The splitter: terminators, caps, decoding."""

from __future__ import annotations

import re
import resource

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.logparse import LogParser
from orchestrator.logparse.lines import LINE_CAP, decode
from orchestrator.logparse.prefixes import parse_line

from .conftest import parse_all


class TestTerminators:
    def test_lines_are_numbered_as_an_editor_numbers_them(self) -> None:
        """\\n and \\r\\n end a numbered line; a bare \\r (between tqdm frames) ends a line for parsing but
        not a numbered one: ``grep -n``, ``less -N`` and an editor count the same lines."""
        _, p = parse_all(b"a\nb\r\nc\rd\n")
        assert p.analysis().lines == 3
        _, p = parse_all(b"a\nb\rERROR boom\nc\n")
        assert p.analysis().lines == 3 and p.analysis().first_error is not None
        assert p.analysis().first_error.line_no == 2

    def test_tqdm_frames_on_one_physical_line_are_separate_lines(self) -> None:
        """Frames joined by \\r are lines of their own; the last reading wins."""
        frames = b"".join(
            b"\rLoading safetensors checkpoint shards: %3d%% Completed | %d/64 [00:01<00:02, 2.00it/s]" % (
                k * 100 // 64, k) for k in range(55))
        _, p = parse_all(frames + b"\n")
        a = p.analysis()
        assert a.lines == 1  # the empty line before the first \r and 55 frames: one line in an editor
        assert a.shards is not None and (a.shards.done, a.shards.total) == (54, 64)

    def test_trailing_partial_line_counts_only_after_finish(self) -> None:
        """A line without terminator is pending until finish()."""
        p = LogParser()
        p.feed(b"done line\npartial")
        assert p.analysis().lines == 1
        assert p.line_end_offset == len(b"done line\n")
        p.finish()
        assert p.analysis().lines == 2
        assert p.analysis().bytes == len(b"done line\npartial")


class TestHugeLine:
    def test_fifty_megabytes_without_newline_keeps_memory_bounded(self) -> None:
        """A 50 MB line fed in 1 MB chunks: bytes are all counted, only LINE_CAP of it is kept."""
        p = LogParser()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            p.feed(chunk)
        assert len(p._pending) <= LINE_CAP
        p.feed(b" ERROR: tail\nTraceback (most recent call last):\n  File \"a\", line 1\nValueError: boom\n")
        p.finish()
        a = p.analysis()
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert grown_kib < 40 * 1024
        assert a.bytes == 50 * (1 << 20) + len(
            b" ERROR: tail\nTraceback (most recent call last):\n  File \"a\", line 1\nValueError: boom\n")
        assert a.lines == 4
        assert a.root_cause is not None and a.root_cause.exception == "ValueError"

    def test_huge_line_in_one_chunk_is_capped_when_examined(self) -> None:
        """A needle past the cap of a giant line is not read (both as one chunk and split)."""
        data = b"a" * (LINE_CAP + 10) + b" ERROR: late\n"
        _, whole = parse_all(data)
        _, split = parse_all(data, [5000] * 5)
        assert whole.analysis() == split.analysis()
        assert not whole.analysis().failed


class TestDecoding:
    def test_invalid_utf8_and_nul_do_not_break_parsing(self) -> None:
        """Bad bytes are replaced and NULs dropped."""
        text = decode(b"ab\x00c\xff\xfed")
        assert "\x00" not in text and text.startswith("abc") and text.endswith("d")

    def test_ansi_colours_are_stripped_before_prefix_parsing(self) -> None:
        """A TTY-coloured 0.16 prefix still names the process."""
        line = parse_line(decode(b"\x1b[36m(Worker_TP3 pid=9)\x1b[0m \x1b[31mERROR\x1b[0m 02-21 21:43:12 "
                                 b"[multiproc_executor.py:863] boom"))
        assert (line.process, line.pid, line.level, line.message) == ("Worker_TP3", 9, "ERROR", "boom")


@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b"bc" * 40, b"ERROR x"]), max_size=300)
       .map(b"".join), st.lists(st.integers(1, 64), max_size=40))
def test_lines_and_error_lines_are_numbered_as_grep_n_numbers_them(data: bytes, chunks: list[int]) -> None:
    """Whatever the terminators and however the bytes are cut: ``lines`` is what ``wc -l`` gives (one more
    for an unterminated last line) and each error line's number is ``grep -n``'s."""
    events, p = parse_all(data, chunks or None)
    assert p.analysis().lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    want = [i + 1 for i, line in enumerate(data.split(b"\n")) for part in re.split(rb"\r", line)
            if part.startswith(b"ERROR x")]
    assert [e.line_no for e in events if e.kind == "error_seen"] == want