"""The log's last lines kept while parsing: the evidence of a failure that printed no exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.logparse import LogParser
from orchestrator.logparse.tail import KEEP, LINE_CHARS, LogTail, failure_evidence, first_error_line

LOG = b"".join(f"line {i}\n".encode() for i in range(40)) + b"error: something bad\r\nbye\n"


def tail_of(*chunks: bytes) -> list[str]:
    tail = LogTail()
    for chunk in chunks:
        tail.feed(chunk)
    tail.finish()
    return tail.lines


class TestLogTail:
    def test_keeps_the_last_lines_in_order(self) -> None:
        """The last KEEP lines, oldest first; the \\r of a vLLM continuation line is not shown."""
        lines = tail_of(LOG)
        assert len(lines) == KEEP
        assert lines[-2:] == ["error: something bad", "bye"]
        assert lines[0] == f"line {40 - KEEP + 2}"

    @given(st.lists(st.integers(min_value=0, max_value=len(LOG)), max_size=12))
    def test_any_chunking_gives_the_same_tail(self, cuts: list[int]) -> None:
        """Lines split across chunks are joined: the tail does not depend on how the bytes arrived."""
        points = sorted(set(cuts))
        chunks = [LOG[a:b] for a, b in zip([0, *points], [*points, len(LOG)])]
        assert tail_of(*chunks) == tail_of(LOG)

    def test_tqdm_frames_show_as_a_terminal_shows_them(self) -> None:
        """A line of \\r-separated frames shows its last frame."""
        assert tail_of(b"Loading 1/4\rLoading 2/4\rLoading 3/4\r\n\n\nstuck\n") == ["Loading 3/4", "stuck"]

    def test_unterminated_last_line_is_kept_after_finish_and_shown_before(self) -> None:
        tail = LogTail()
        tail.feed(b"one\ntwo")
        assert tail.lines == ["one", "two"]
        tail.finish()
        assert tail.to_json() == ["one", "two"]

    def test_text_is_inert_and_capped(self) -> None:
        """Escape sequences and control characters never reach the screen; long lines are cut."""
        lines = tail_of(b"\x1b]52;c;SGVsbG8=\x07\x1b[31mred\x1b[0m\x1bc\xc2\x9b\x07 x\n" + b"y" * 5000 + b"\n")
        assert lines[0] == "red x"
        assert len(lines[1]) == LINE_CHARS + 1 and lines[1].endswith("…")

    def test_first_error_line(self) -> None:
        assert first_error_line(["ok", "error: bad", "FATAL: worse"]) == "error: bad"
        assert first_error_line(["mirror terror", "all good"]) is None
        assert first_error_line(["step 3 failed: disk"]) == "step 3 failed: disk"


class TestParserKeepsTheTail:
    def test_snapshot_and_restore_continue_the_tail(self) -> None:
        """A monitor restarted from the committed snapshot ends with the same tail as one that never stopped."""
        whole = LogParser()
        whole.feed(LOG)
        whole.finish()
        first = LogParser()
        first.feed(LOG[:150])
        snap = first.snapshot()
        resumed = LogParser.restore(snap)
        resumed.feed(LOG[snap["offset"]:])
        resumed.finish()
        assert resumed.tail_lines == whole.tail_lines

    def test_evidence_of_a_plain_error_log(self) -> None:
        parser = LogParser()
        parser.feed(b"starting\nerror: something bad\n")
        parser.finish()
        evidence = failure_evidence(parser.snapshot())
        assert evidence == {"first_error_line": "error: something bad", "log_tail": ["starting", "error: something bad"]}

    def test_evidence_prefers_the_parsers_first_error_record(self) -> None:
        """An ERROR record early in a long log is the first error line even when it left the tail."""
        parser = LogParser()
        parser.feed(b"ERROR 12-01 08:00:00 [x.py:1] disk quota exceeded\n" + b"".join(
            f"step {i}\n".encode() for i in range(50)))
        parser.finish()
        evidence = failure_evidence(parser.snapshot())
        assert evidence["first_error_line"] is not None
        assert "disk quota exceeded" in evidence["first_error_line"]
        assert evidence["log_tail"][-1] == "step 49"

    def test_no_snapshot_no_evidence(self) -> None:
        assert failure_evidence(None) == {"first_error_line": None, "log_tail": []}
