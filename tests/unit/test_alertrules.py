"""Alert rules: snapshots and a clock value in, alerts with de-duplication keys out."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from orchestrator.alerts.rules import (
    AlertKind,
    HostSnapshot,
    RunFacts,
    RunSnapshot,
    evaluate,
    evaluate_host,
    kind_allowed,
    make_test_alert,
    stall_of,
)

NOW = datetime(2026, 11, 29, 12, 0, 0)
CAUSE = {"exception": "torch.OutOfMemoryError", "message": "CUDA out of memory. Tried to allocate 2.00 GiB",
         "process": "Worker_TP0", "signature": "cuda_oom", "traceback": "Traceback ..."}


def snap(**kw: object) -> RunSnapshot:
    base = RunSnapshot(run_id="ab12cd34", name="eagle3-llama", host="gpu", status="running", phase="loading",
                       kind="eagle3", shards_done=3, shards_total=8, started_at=NOW - timedelta(minutes=5),
                       last_activity_at=NOW - timedelta(seconds=10))
    return replace(base, **kw)  # type: ignore[arg-type]


def kinds(alerts: list) -> list[AlertKind]:
    return [a.kind for a in alerts]


class TestTerminal:
    def test_failed_run_raises_failed_with_cause_hint_and_show_command(self) -> None:
        """A failed run raises one `failed` alert naming run, host, exit code, cause, hint and `eorch show`."""
        alerts = evaluate(snap(status="failed", phase="failed", exit_code=1, root_cause=CAUSE,
                               hint="lower --gpu-memory-utilization"), RunFacts(), NOW)
        assert kinds(alerts) == [AlertKind.FAILED]
        body = alerts[0].body
        for needle in ("eagle3-llama", "gpu", "Exit code: 1", "torch.OutOfMemoryError", "CUDA out of memory",
                       "Worker_TP0", "lower --gpu-memory-utilization", "eorch show ab12cd34", "shards 3/8"):
            assert needle in body
        assert alerts[0].dedup_key == "ab12cd34:failed"

    def test_each_terminal_status_maps_to_its_kind(self) -> None:
        """succeeded, lost and cancelled each raise their own kind and nothing else."""
        for status in ("succeeded", "lost", "cancelled"):
            assert kinds(evaluate(snap(status=status), RunFacts(), NOW)) == [AlertKind(status)]

    def test_terminal_run_raises_no_progress_alerts(self) -> None:
        """A finished run whose shards are all loaded raises only its terminal alert."""
        alerts = evaluate(snap(status="succeeded", shards_done=8, phase="stopped"), RunFacts(), NOW)
        assert kinds(alerts) == [AlertKind.SUCCEEDED]


class TestProgress:
    def test_loading_run_raises_nothing(self) -> None:
        """A run still loading shards with recent output deserves no alert."""
        assert evaluate(snap(), RunFacts(), NOW) == []

    def test_all_shards_loaded_raises_loading_finished(self) -> None:
        """The last shard loaded ends the long wait."""
        assert kinds(evaluate(snap(shards_done=8), RunFacts(), NOW)) == [AlertKind.LOADING_FINISHED]

    def test_phase_event_to_loaded_raises_loading_finished(self) -> None:
        """A phase_changed event to `loaded` is enough even before the row shows it."""
        facts = RunFacts(events=({"kind": "phase_changed", "to": "loaded"},))
        assert kinds(evaluate(snap(shards_total=None, shards_done=None), facts, NOW)) == [AlertKind.LOADING_FINISHED]

    def test_serving_raises_loading_finished_and_ready(self) -> None:
        """A server that is up has necessarily finished loading."""
        alerts = evaluate(snap(phase="serving", shards_done=8), RunFacts(), NOW)
        assert kinds(alerts) == [AlertKind.LOADING_FINISHED, AlertKind.READY]
        assert {a.dedup_key for a in alerts} == {"ab12cd34:loading_finished", "ab12cd34:ready"}

    def test_command_run_running_is_not_ready(self) -> None:
        """A plain command in phase `running` has no server to be ready."""
        assert evaluate(snap(kind="command", phase="running", shards_total=None, shards_done=None),
                        RunFacts(), NOW) == []


class TestStall:
    def test_silence_longer_than_n_minutes_is_a_stall(self) -> None:
        """No output for the run's N minutes raises `stalled` with the reason."""
        alerts = evaluate(snap(last_activity_at=NOW - timedelta(minutes=16)), RunFacts(), NOW)
        assert kinds(alerts) == [AlertKind.STALLED]
        assert "no new log output" in alerts[0].body

    def test_stall_minutes_are_per_run(self) -> None:
        """A run with a 30-minute allowance is not stalled after 16 quiet minutes."""
        quiet = snap(last_activity_at=NOW - timedelta(minutes=16), stall_minutes=30)
        assert stall_of(quiet, (), NOW) is None

    def test_broadcast_wait_signature_is_a_stall_warning(self) -> None:
        """The shared-memory broadcast wait warning counts as a stall at once."""
        facts = RunFacts(events=({"kind": "signature_matched", "signature": "broadcast_wait"},))
        assert kinds(evaluate(snap(), facts, NOW)) == [AlertKind.STALLED]

    def test_no_stall_before_the_run_started(self) -> None:
        """A launching run with no start time is never stalled."""
        assert stall_of(snap(status="launching", started_at=None, last_activity_at=None), (), NOW) is None

    def test_silence_counts_from_the_start_without_output(self) -> None:
        """A run that never printed counts its silence from its start."""
        quiet = snap(last_activity_at=None, started_at=NOW - timedelta(minutes=20))
        assert stall_of(quiet, (), NOW) is not None


class TestHost:
    def test_unreachable_longer_than_m_minutes_alerts_once_per_outage(self) -> None:
        """The key carries the outage start, so a later outage alerts again."""
        since = NOW - timedelta(minutes=6)
        host = HostSnapshot("gpu", False, since, "Connection refused", ("ab12cd34",))
        alerts = evaluate_host(host, NOW, 5)
        assert kinds(alerts) == [AlertKind.HOST_UNREACHABLE]
        assert "Connection refused" in alerts[0].body and "ab12cd34" in alerts[0].body
        later = HostSnapshot("gpu", False, NOW, None)
        assert evaluate_host(later, NOW + timedelta(minutes=6), 5)[0].dedup_key != alerts[0].dedup_key

    def test_short_outage_or_reachable_host_raises_nothing(self) -> None:
        """Four minutes down, or reachable, is not worth an alert."""
        assert evaluate_host(HostSnapshot("gpu", False, NOW - timedelta(minutes=4)), NOW, 5) == []
        assert evaluate_host(HostSnapshot("gpu", True, None), NOW, 5) == []


class TestFilters:
    def test_kind_filters(self) -> None:
        """An empty filter passes everything; a list passes only its kinds; tests pass every filter."""
        assert kind_allowed(AlertKind.READY, None)
        assert not kind_allowed(AlertKind.READY, ["failed"])
        assert kind_allowed(AlertKind.FAILED, ["failed"])
        assert kind_allowed(make_test_alert(NOW).kind, ["failed"])


GATE_DONE = {"kind": "step", "step": "gate", "state": "done",
             "detail": {"index": 0, "checks": {"shape": [57, 4, 256], "finite": True}}}


class TestExtractionVerified:

    def test_gate_passed_raises_extraction_verified_once_keyed(self) -> None:
        """The recipe's first-sample gate passing raises `extraction_verified` (de-dup key run:kind)."""
        alerts = evaluate(snap(phase="serving", shards_done=8), RunFacts(events=(GATE_DONE,)), NOW)
        verified = [a for a in alerts if a.kind is AlertKind.EXTRACTION_VERIFIED]
        assert len(verified) == 1 and verified[0].dedup_key == "ab12cd34:extraction_verified"
        assert "first-sample check" in verified[0].body

    def test_gate_started_or_failed_raises_none(self) -> None:
        for state in ("started", "failed"):
            events = ({**GATE_DONE, "state": state},)
            assert AlertKind.EXTRACTION_VERIFIED not in kinds(evaluate(snap(), RunFacts(events=events), NOW))

    def test_channels_may_filter_on_it(self) -> None:
        assert kind_allowed(AlertKind.EXTRACTION_VERIFIED, ["extraction_verified"])
        assert not kind_allowed(AlertKind.EXTRACTION_VERIFIED, ["failed"])


class TestMuted:
    """A muted run (`eorch alerts mute`) deserves no alert, whatever happened to it."""

    def test_muted_run_raises_nothing(self) -> None:
        """A failed run raises its alert; the same run muted raises none."""
        from dataclasses import replace
        from datetime import datetime

        from orchestrator.alerts.rules import RunFacts, RunSnapshot, evaluate

        now = datetime(2026, 12, 1, 12, 0)
        failed = RunSnapshot(run_id="r1", name="job", host="gpu", status="failed", phase="failed", exit_code=1)
        assert [a.kind.value for a in evaluate(failed, RunFacts(new_status="failed"), now)] == ["failed"]
        assert evaluate(replace(failed, muted=True), RunFacts(new_status="failed"), now) == []
