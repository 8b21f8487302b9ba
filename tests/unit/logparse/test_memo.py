"""``Memo``: a pure function's answers kept for short keys, bounded in count and length."""

from __future__ import annotations

from orchestrator.logparse.memo import Memo
from orchestrator.logparse.phases import mentions
from orchestrator.logparse.prefixes import parse_line
from orchestrator.logparse.signatures import load_catalogue


def test_answers_are_kept_for_short_keys_only_and_dropped_when_full() -> None:
    calls: list[str] = []

    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    memo = Memo(upper, cap=2, longest=3)
    assert [memo("ab"), memo("ab"), memo("abcd"), memo("abcd")] == ["AB", "AB", "ABCD", "ABCD"]
    assert calls == ["ab", "abcd", "abcd"]  # the long key is computed every time
    memo("c")
    memo("d")  # the memo was full (ab, c): it starts again with d
    memo("ab")
    assert calls[-3:] == ["c", "d", "ab"]


def test_kept_answers_are_the_computed_ones() -> None:
    cat = load_catalogue()
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    first = cat.match(text)
    assert first and cat.match(text) == first == cat._shown(text)
    line = "(APIServer pid=7) INFO:     Application startup complete."
    assert parse_line(line) == parse_line(line) and parse_line(line).key == "APIServer:7"
    assert parse_line(line, ("Worker", 3)).pid == 7  # an inherited writer is never served from the memo
    said = mentions("Application startup complete.")
    assert [m.phase.value for m in said.markers] == ["serving"] and not said.clean
