"""Durations and ages as people read them, the same in the CLI and the TUI."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from orchestrator.core.humanize import ago, run_time, short_span, span

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
