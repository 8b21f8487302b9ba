"""orchestrator.core.freshness: output times from host mtimes, ETAs counted down and overdue, the "as of" note."""

from __future__ import annotations

from datetime import datetime, timedelta

from orchestrator.core.freshness import eta_text, last_output_text, output_time, status_note

NOW = datetime(2026, 12, 1, 8, 30, 0)


class TestOutputTime:
    def test_age_is_taken_on_the_hosts_clock(self) -> None:
        """A host clock an hour ahead does not make output look an hour old: only host now - mtime counts."""
        host_now = 1_000_000.0 + 3600
        live = {"log_mtime": host_now - 120, "events_mtime": None}
        assert output_time(live, host_now, NOW) == NOW - timedelta(seconds=120)

    def test_the_newer_of_log_and_step_events_wins(self) -> None:
        """Step events written after the log count as output."""
        assert output_time({"log_mtime": 100.0, "events_mtime": 190.0}, 200.0, NOW) == NOW - timedelta(seconds=10)

    def test_unknown_without_mtimes(self) -> None:
        """No file facts (an old agent, no log yet): unknown, not "now"."""
        assert output_time({}, 200.0, NOW) is None


class TestEta:
    def test_eta_counts_down_from_the_last_output(self) -> None:
        """`ETA 4m19s` written 1 minute ago is `ETA 3m19s` now."""
        assert eta_text(259, NOW - timedelta(minutes=1), NOW) == "ETA 3m19s"

    def test_a_passed_eta_is_overdue(self) -> None:
        """25 quiet minutes after `ETA 4m19s`: overdue by 20 minutes, no ETA."""
        assert eta_text(259, NOW - timedelta(minutes=25), NOW) == "overdue 20m"

    def test_an_eta_just_passed_is_not_overdue_yet(self) -> None:
        """A bar that said `<00:00` 5 s ago, or `ETA 10s` 50 s ago, is at 0 (its next frame is due), not
        "overdue 5s"; a minute past the ETA it is overdue."""
        assert eta_text(0, NOW - timedelta(seconds=5), NOW) == "ETA 0s"
        assert eta_text(10, NOW - timedelta(seconds=50), NOW) == "ETA 0s"
        assert eta_text(10, NOW - timedelta(seconds=75), NOW) == "overdue 1m05s"

    def test_last_output_words(self) -> None:
        """`last output 12m ago`; `just now` under a minute; nothing when unknown."""
        assert last_output_text(NOW - timedelta(minutes=12), NOW) == "last output 12m ago"
        assert last_output_text(NOW - timedelta(seconds=5), NOW) == "last output just now"
        assert last_output_text(None, NOW) == ""


class TestStatusNote:
    def note(self, **kw: object) -> str:
        args: dict = {"checked_at": NOW - timedelta(minutes=8), "created_at": NOW - timedelta(hours=1),
                      "host": "gpu", "host_reachable": False, "host_error": "Connection refused",
                      "monitor_running": False}
        args.update(kw)
        return status_note(str(args.pop("status", "running")), **args)

    def test_an_unconfirmed_active_run_says_as_of_and_why(self) -> None:
        """Unreachable host, no monitor: "as of HH:MM, no monitor running; gpu unreachable: …"."""
        text = self.note()
        assert text.startswith("as of ") and "no monitor running; gpu unreachable: Connection refused" in text

    def test_a_reachable_host_or_an_ended_run_needs_no_note(self) -> None:
        """A status just confirmed, or a terminal one, is current."""
        assert self.note(host_reachable=True) == ""
        assert self.note(status="failed") == ""

    def test_a_monitor_that_cannot_reach_the_host_is_said_too(self) -> None:
        """With a monitor running but the link down, the status is still only as of the last check."""
        assert "monitor reconnecting" in self.note(monitor_running=True)
