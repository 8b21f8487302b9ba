"""How many of a run's log events the history keeps: repeated ones are counted, not stored again and again.

Pure: event dicts in, the dicts to store out. A server rejecting a million requests prints a million
``ERROR`` records; the history needs the first few of each kind of error (what ``show``, ``similar`` and the
TUI read), and how many there were. So, per run and for the kinds that can repeat without bound:

- an event whose fingerprint (kind + text) was already stored ``REPEATS_KEPT`` times is only counted;
- once ``KIND_CAP`` events of a kind are stored, further ones are only counted.

``seen`` (every event, stored or not) and ``stored`` per kind go to ``runs.event_counts`` in the same
transaction as the log offset, with the fingerprints of what was stored, so a restarted follower keeps the
same budget and the counts stay exact. Everything else (phases, shards, progress, root causes) is stored.
"""

from __future__ import annotations

import hashlib
from typing import Any

BUDGETED_KINDS = frozenset({"error_seen", "signature_matched", "traceback_completed"})
REPEATS_KEPT = 3
KIND_CAP = 500


def fingerprint(event: dict[str, Any]) -> str:
    """What makes two events "the same" for the budget: kind and text (signature id for a match)."""
    text = event.get("id") if event["kind"] == "signature_matched" else event.get("text")
    digest = hashlib.blake2b(f"{event['kind']}\0{text}".encode(errors="replace"), digest_size=8)
    return digest.hexdigest()


class EventBudget:
    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.seen: dict[str, int] = dict(state.get("seen", {}))
        self.stored: dict[str, int] = dict(state.get("stored", {}))
        self.repeats: dict[str, int] = dict(state.get("repeats", {}))

    def admit(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events of ``events`` to store; every one of them is counted."""
        kept = []
        for event in events:
            kind = event["kind"]
            if kind not in BUDGETED_KINDS:
                kept.append(event)
                continue
            self.seen[kind] = self.seen.get(kind, 0) + 1
            if self.stored.get(kind, 0) >= KIND_CAP:
                continue
            key = fingerprint(event)
            repeats = self.repeats.get(key, 0)
            if repeats >= REPEATS_KEPT:
                continue
            self.repeats[key] = repeats + 1
            self.stored[kind] = self.stored.get(kind, 0) + 1
            kept.append(event)
        return kept

    def suppressed(self) -> dict[str, int]:
        return {k: n - self.stored.get(k, 0) for k, n in sorted(self.seen.items()) if n > self.stored.get(k, 0)}

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state (``runs.event_counts``); ``repeats`` holds at most KIND_CAP keys per kind."""
        return {"seen": dict(self.seen), "stored": dict(self.stored), "repeats": dict(self.repeats)}
