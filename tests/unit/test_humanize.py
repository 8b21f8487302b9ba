"""Durations and ages as people read them, the same in the CLI and the TUI."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from orchestrator.core.humanize import ago, earlier_tries, run_time, short_span, span, tries_in_log

NOW = datetime(2026, 12, 1, 12, 0, 0)


class TestSpans:
    @pytest.mark.parametrize(("seconds", "text"), [
        (None, "—"), (-3, "0s"), (42, "42s"), (259, "4m19s"), (1063, "17m43s"), (11520, "3h12m"), (187200, "2d04h"),
    ])
    def test_span(self, seconds: float | None, text: str) -> None:
        assert span(seconds) == text

    def test_short_span_drops_seconds_between_ten_minutes_and_an_hour(self) -> None:
        assert [short_span(s) for s in (599, 600, 3599, 3600)] == ["9m59s", "10m", "59m", "1h00m"]


class TestAges:
    @pytest.mark.parametrize(("delta", "text"), [
        (timedelta(seconds=2), "just now"), (timedelta(seconds=42), "42s ago"), (timedelta(minutes=3), "3m ago"),
        (timedelta(hours=5, minutes=59), "5h ago"), (timedelta(days=2), "2d ago"), (timedelta(days=45), "2026-10-17"),
    ])
    def test_ago(self, delta: timedelta, text: str) -> None:
        assert ago(NOW - delta, NOW) == text

    def test_run_time(self) -> None:
        start = NOW - timedelta(minutes=15)
        assert run_time(start, start + timedelta(seconds=55), NOW, active=False) == "ran 55s"
        assert run_time(start, None, NOW, active=True) == "running 15m"
        assert run_time(None, None, NOW, active=True) == "—"


def test_earlier_tries_are_numbered_as_in_the_log_when_the_earliest_are_not_listed() -> None:
    """`show` and the TUI list the tries before the last by the numbers the log analysis gave them: the 16 kept
    of 40 are tries 24-39 of 40, one line when they ended alike; a record written before tries were numbered
    counts them in order."""
    kept = [{"try": n, "first_line": n, "last_line": n, "phase": "failed", "failed": True, "root_cause": None}
            for n in range(24, 40)]
    assert tries_in_log(kept) == 40 and tries_in_log([]) == 1
    assert earlier_tries(kept) == [("tries 24-39 of 40 (lines 24-39), each", "FAILED", True)]
    kept[3] = {**kept[3], "failed": False, "phase": "stopped"}
    assert earlier_tries(kept) == [("tries 24-26 of 40 (lines 24-26), each", "FAILED", True),
                                   ("try 27 of 40 (lines 27-27)", "stopped", False),
                                   ("tries 28-39 of 40 (lines 28-39), each", "FAILED", True)]
    old = [{k: v for k, v in e.items() if k != "try"} for e in kept[2:4]]
    assert [where for where, _, _ in earlier_tries(old)] == ["try 1 of 3 (lines 26-26)", "try 2 of 3 (lines 27-27)"]
