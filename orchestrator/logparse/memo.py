"""Answers of a pure function of a line's text, kept for short texts: in a log dense with errors the same
messages come back again and again (a server rejecting requests logs one traceback per request), and the
answer for a message does not change.  Memory is bounded: up to ``cap`` texts of at most ``longest``
characters, dropped all at once when full (no bookkeeping per hit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, fn: Callable[[str], V], cap: int = 4096, longest: int = 1024) -> None:
        self._fn, self._cap, self._longest = fn, cap, longest
        self._kept: dict[str, V] = {}

    def __call__(self, key: str) -> V:
        kept = self._kept
        try:
            return kept[key]
        except KeyError:
            pass
        value = self._fn(key)
        if len(key) <= self._longest:
            if len(kept) >= self._cap:
                kept.clear()
            kept[key] = value
        return value
