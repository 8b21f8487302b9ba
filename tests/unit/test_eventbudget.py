"""Repeated log events are counted, not stored again and again (orchestrator.core.eventbudget)."""

from __future__ import annotations

from orchestrator.core.eventbudget import KIND_CAP, REPEATS_KEPT, EventBudget
from orchestrator.logparse import LogParser


def error(text: str, line_no: int) -> dict:
    return {"kind": "error_seen", "line_no": line_no, "process": "main", "text": text}


class TestEventBudget:
    def test_an_identical_error_is_stored_a_few_times_and_counted_always(self) -> None:
        """A million identical errors: REPEATS_KEPT rows, a count of a million."""
        budget = EventBudget()
        kept = budget.admit([error("request rejected", n) for n in range(1, 1001)])
        assert [e["line_no"] for e in kept] == list(range(1, REPEATS_KEPT + 1))
        assert budget.seen == {"error_seen": 1000} and budget.suppressed() == {"error_seen": 1000 - REPEATS_KEPT}

    def test_distinct_errors_stop_being_stored_at_the_kind_cap(self) -> None:
        """Distinct texts are stored up to KIND_CAP per kind; the rest are counted."""
        budget = EventBudget()
        kept = budget.admit([error(f"request {n} rejected", n) for n in range(KIND_CAP + 50)])
        assert len(kept) == KIND_CAP and budget.seen["error_seen"] == KIND_CAP + 50

    def test_other_kinds_are_always_stored(self) -> None:
        """Phases, progress and root causes are what queries read: never budgeted."""
        budget = EventBudget()
        events = [{"kind": "progress_reported", "done": n, "total": 10, "line_no": n} for n in range(10)]
        assert budget.admit(events) == events and budget.seen == {}

    def test_a_restored_budget_continues_exactly(self) -> None:
        """Split anywhere and restored from its snapshot, the budget keeps what one pass keeps."""
        events = [error(f"e{n % 7}", n) for n in range(100)]
        whole = EventBudget().admit(events)
        first = EventBudget()
        part = first.admit(events[:40])
        second = EventBudget(first.snapshot())
        assert part + second.admit(events[40:]) == whole and second.seen == {"error_seen": 100}

    def test_a_log_of_repeated_errors_keeps_few_rows(self) -> None:
        """The parser's events for 10,000 identical vLLM ERROR records shrink to a handful of rows."""
        log = b"ERROR 12-01 10:00:00 [engine.py:42] request rejected: input too long\n" * 10000
        parser = LogParser()
        events = [e.to_dict() for e in parser.feed(log) + parser.finish()]
        budget = EventBudget()
        kept = budget.admit(events)
        assert budget.seen["error_seen"] == 10000 and len(kept) < 10
