"""The monitor against a scripted host (tests/scriptedhost.py): drains, truncations, an rc before the last line.

The host's transport is injected (``Context(transport_for=...)``); the history is a real SQLite file
migrated by Alembic. The scripted host decides what the monitor has read when it reports an exit, so
each ordering is tested exactly, in well under a second, without sshd.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scriptedhost import ROOT, ScriptedRun, ScriptedTransport, until

from orchestrator.config import load_settings
from orchestrator.context import Context
from orchestrator.core.notices import HostReachabilityChanged, LogTruncated, Notice, RunStatusChanged
from orchestrator.core.runstate import RunStatus
from orchestrator.monitoring.connection import Backoff
from orchestrator.monitoring.monitor import Monitor
from orchestrator.store import queries
from orchestrator.store.db import open_store
from orchestrator.store.models import Host, Run

HOST = "scripted"
TRACEBACK = (b'Traceback (most recent call last):\n  File "job.py", line 3, in <module>\n    main()\n'
             b"RuntimeError: boom\n")


def lines(prefix: str, n: int) -> bytes:
    return b"".join(b"INFO %s step %d\n" % (prefix.encode(), i) for i in range(n))


@dataclass
class Rig:
    ctx: Context
    transport: ScriptedTransport
    notices: list[Notice]

    def add_run(self, log: bytes = b"", status: RunStatus = RunStatus.RUNNING) -> tuple[str, ScriptedRun]:
        run_id = queries.new_run_id()
        remote_dir = f"{ROOT}/runs/{run_id}"
        now = queries.utcnow()
        with self.ctx.db() as s:
            s.add(Run(id=run_id, name="job", host=HOST, kind="command", command=["job"], env={}, status=status.value,
                      phase="starting", cancel_requested=False, created_at=now, started_at=now,
                      remote_dir=remote_dir, log_offset=0, events_offset=0))
        return run_id, self.transport.add_run(remote_dir, log)

    def run(self, run_id: str) -> Run:
        with self.ctx.db() as s:
            row = s.get(Run, run_id)
        assert row is not None
        return row

    def event_data(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        with self.ctx.db() as s:
            return [e.data for e in queries.events_of(s, run_id, kinds=(kind,))]

    def monitor(self, *run_ids: str) -> Monitor:
        return Monitor(self.ctx, run_refs=run_ids, listeners=[self.notices.append], poll_interval=0.05)

    def draining(self, monitor: Monitor, run_id: str) -> bool:
        """Whether the monitor is reading the run's log to the size it had when the process ended."""
        watcher = monitor.host_watchers.get(HOST)
        followed = watcher.followers.get(run_id) if watcher else None
        return followed is not None and followed.log.stream.target_size is not None


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    home = tmp_path / "home"
    settings = load_settings({"EORCH_HOME": str(home)})
    transport = ScriptedTransport()
    ctx = Context(settings, open_store(settings.db_path), transport_for=lambda host, _: transport)
    with ctx.db() as s:
        s.add(Host(name=HOST, destination="scripted", port=None, root=ROOT, python="python3",
                   created_at=queries.utcnow()))
    yield Rig(ctx, transport, [])
    await ctx.close()


def status_changes(notices: list[Notice], run_id: str) -> list[tuple[str, str]]:
    return [(n.old, n.new) for n in notices if isinstance(n, RunStatusChanged) and n.run_id == run_id]


class TestDrainBeforeTerminal:
    async def test_an_ended_run_is_terminal_only_once_its_log_is_read_to_the_end(self, rig: Rig) -> None:
        """The host reports the exit while the monitor has read 2 lines of 40: it stays running, reads the
        rest, and only then is succeeded, with every line recorded."""
        log = lines("a", 40)
        run_id, job = rig.add_run(log)
        job.log.hold_at(len(lines("a", 2)))
        offset_at_change: list[int] = []

        def at_change(notice: Notice) -> None:
            if isinstance(notice, RunStatusChanged) and notice.run_id == run_id:
                offset_at_change.append(rig.run(run_id).log_offset)

        monitor = rig.monitor(run_id)
        monitor.listeners.append(at_change)
        task = asyncio.create_task(monitor.run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(lines("a", 2)), "the first two lines")
        job.exit(0)
        await until(lambda: rig.draining(monitor, run_id), "the drain to start")
        assert rig.run(run_id).status == "running"  # the host said it ended; its log is not read yet
        job.log.release()
        await asyncio.wait_for(task, 10)
        run = rig.run(run_id)
        assert (run.status, run.exit_code, run.log_offset, run.phase) == ("succeeded", 0, len(log), "stopped")
        assert offset_at_change == [len(log)]
        assert status_changes(rig.notices, run_id) == [("running", "succeeded")]


class TestRcBeforeTheLastLine:
    async def test_a_traceback_read_after_the_rc_fails_a_run_that_exited_0(self, rig: Rig) -> None:
        """rc 0 arrives before the traceback the job printed last is read: the verdict waits for it (failed)."""
        head = lines("b", 5)
        run_id, job = rig.add_run(head + TRACEBACK)
        job.log.hold_at(len(head))
        monitor = rig.monitor(run_id)
        task = asyncio.create_task(monitor.run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(head), "the lines before the traceback")
        job.exit(0)
        await until(lambda: rig.draining(monitor, run_id), "the drain to start")
        job.log.release()
        await asyncio.wait_for(task, 10)
        run = rig.run(run_id)
        assert (run.status, run.exit_code, run.phase) == ("failed", 0, "failed")
        assert run.root_cause is not None and run.root_cause["exception"] == "RuntimeError"
        assert run.log_offset == len(head + TRACEBACK)

    async def test_a_last_line_without_a_newline_is_recorded(self, rig: Rig) -> None:
        """The job's last words had no line end when it exited: they are still read, parsed and committed."""
        head, last = lines("c", 3), b"RuntimeError: no newline"
        run_id, job = rig.add_run(head + last)
        job.log.hold_at(len(head))
        monitor = rig.monitor(run_id)
        task = asyncio.create_task(monitor.run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(head), "the complete lines")
        job.exit(1)
        await until(lambda: rig.draining(monitor, run_id), "the drain to start")
        job.log.release()
        await asyncio.wait_for(task, 10)
        run = rig.run(run_id)
        assert (run.status, run.exit_code, run.log_offset) == ("failed", 1, len(head + last))


class TestTruncationWhileDraining:
    @pytest.mark.parametrize("how", ["truncated", "replaced"])
    async def test_a_log_cut_before_the_exit_is_read_again_from_its_start(self, rig: Rig, how: str) -> None:
        """The log is cut (same inode, shorter) or replaced (new inode) and the job exits before the monitor
        read the new content: the ended run is not settled on the old log; it is read again from byte 0."""
        old, new = lines("old", 30), lines("new", 3) + TRACEBACK
        run_id, job = rig.add_run(old)
        monitor = rig.monitor(run_id)
        task = asyncio.create_task(monitor.run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(old), "the old log to be read")
        job.log.hold_at(0)  # no follower sees the new content until the monitor found the cut
        job.log.truncate_to(new) if how == "truncated" else job.log.replace(new)
        job.exit(1)
        await until(lambda: any(isinstance(n, LogTruncated) for n in rig.notices), "the cut to be found")
        assert rig.run(run_id).status == "running"
        job.log.release()
        await asyncio.wait_for(task, 10)
        run = rig.run(run_id)
        assert (run.status, run.exit_code, run.log_offset) == ("failed", 1, len(new))
        assert run.root_cause is not None and run.root_cause["message"] == "boom"
        [cut] = rig.event_data(run_id, "log_truncated")
        assert cut == {"old_offset": len(old), "new_size": len(new), "replaced": how == "replaced"}
        assert [n.run_id for n in rig.notices if isinstance(n, LogTruncated)] == [run_id]


    async def test_a_log_cut_in_the_middle_of_a_drain_is_read_again_and_settled_on_the_new_content(
        self, rig: Rig
    ) -> None:
        """The job exited; while the monitor drains its backlog (held at 10 lines of 30) the log is cut: that
        drain attempt fails, the next round finds the cut, and the new content is read from byte 0 and judged."""
        old, new = lines("old", 30), lines("new", 2) + TRACEBACK
        read = len(lines("old", 10))
        assert len(new) < read
        run_id, job = rig.add_run(old)
        job.log.hold_at(read)
        monitor = Monitor(rig.ctx, run_refs=[run_id], listeners=[rig.notices.append], poll_interval=0.05,
                          drain_timeout_s=1.0)

        def release_once_found(notice: Notice) -> None:
            if isinstance(notice, LogTruncated):
                job.log.release()

        monitor.listeners.append(release_once_found)
        task = asyncio.create_task(monitor.run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == read, "the first ten lines")
        job.exit(0)
        await until(lambda: rig.draining(monitor, run_id), "the drain to start")
        job.log.hold_at(0)  # nothing of the new content is read before the cut is found
        job.log.truncate_to(new)
        await asyncio.wait_for(task, 20)
        run = rig.run(run_id)
        assert (run.status, run.exit_code, run.log_offset) == ("failed", 0, len(new))
        assert run.root_cause is not None and run.root_cause["message"] == "boom"
        assert rig.event_data(run_id, "log_truncated") == [{"old_offset": read, "new_size": len(new),
                                                            "replaced": False}]
        assert rig.event_data(run_id, "log_not_drained") == []


class TestFollowerSupervision:
    async def test_a_follower_that_dies_is_restarted_from_the_committed_offset(self, rig: Rig) -> None:
        """Its tail fails to start (not a lost link): the next round starts a new one; no line lost or doubled."""
        log = lines("d", 20)
        run_id, job = rig.add_run(log)
        rig.transport.fail_next_tail = RuntimeError("tail would not start")
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(log), "the log to be read by a second follower")
        assert rig.transport.tail_starts >= 2
        job.exit(0)
        await asyncio.wait_for(task, 10)
        assert rig.run(run_id).status == "succeeded"
        assert rig.transport.bytes_served == len(log)

    async def test_a_broken_stream_is_read_on_where_it_stopped_and_the_host_stays_reachable(self, rig: Rig) -> None:
        """The tail's channel fails mid-log (StreamBroken, not its end of file): the follower starts a new tail at
        the committed offset; no line lost or doubled, and the host is never marked unreachable for it."""
        first, rest = lines("s", 10), lines("t", 10)
        run_id, job = rig.add_run(first + rest)
        rig.transport.break_tail_at = len(first)
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(first + rest), "the whole log, through a second tail")
        assert rig.transport.break_tail_at is None and rig.transport.tail_starts == 2
        job.exit(0)
        await asyncio.wait_for(task, 10)
        assert rig.run(run_id).status == "succeeded"
        assert rig.transport.bytes_served == len(first + rest)
        assert [n.reachable for n in rig.notices if isinstance(n, HostReachabilityChanged)] == [True]


class TestConnection:
    async def test_an_unreachable_host_is_recorded_and_retried_never_failing_the_run(self, rig: Rig) -> None:
        """Connecting fails: the host is marked unreachable once, retried with backoff, the run stays running;
        reachable again, the run is followed and settled."""
        run_id, job = rig.add_run(lines("e", 3))
        rig.transport.unreachable = "no route to host"
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: rig.transport.connects >= 2, "a second connection attempt")
        with rig.ctx.db() as s:
            host = s.get(Host, HOST)
            assert host is not None and host.reachable is False and "no route to host" in (host.last_error or "")
        assert rig.run(run_id).status == "running"
        rig.transport.unreachable = None
        job.exit(0)
        await asyncio.wait_for(task, 10)
        assert rig.run(run_id).status == "succeeded"
        changes = [(n.reachable, n.error) for n in rig.notices if isinstance(n, HostReachabilityChanged)]
        assert changes[0][0] is False and "no route to host" in (changes[0][1] or "") and changes[1:] == [(True, None)]

    async def test_a_link_dropped_mid_run_reconnects_and_loses_no_line(self, rig: Rig) -> None:
        """The agent channel breaks while following: unreachable, then reconnected; the log is read once."""
        first, rest = lines("f", 10), lines("g", 10)
        run_id, job = rig.add_run(first)
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: rig.run(run_id).log_offset == len(first), "the first lines")
        rig.transport.drop_link("connection reset")
        await until(lambda: any(isinstance(n, HostReachabilityChanged) and not n.reachable for n in rig.notices),
                    "the host to be marked unreachable")
        rig.transport.unreachable = None
        job.log.write(rest)
        job.exit(0)
        await asyncio.wait_for(task, 10)
        run = rig.run(run_id)
        assert (run.status, run.log_offset) == ("succeeded", len(first + rest))
        assert [n.reachable for n in rig.notices if isinstance(n, HostReachabilityChanged)] == [True, False, True]

    async def test_a_worker_op_that_fails_is_retried_on_the_same_session(self, rig: Rig) -> None:
        """status_many answered with the worker's crash reply (RemoteOpFailed): the round is retried, the host
        stays reachable on the same connection, the run is followed and settled (the watcher died of it before)."""
        log = lines("o", 3)
        run_id, job = rig.add_run(log)
        rig.transport.crash_next_ops = 2
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: rig.transport.crash_next_ops == 0 and job.reports > 0, "a report after two failed ones")
        assert not task.done() and rig.run(run_id).status == "running"
        job.exit(0)
        await asyncio.wait_for(task, 10)
        assert (rig.run(run_id).status, rig.run(run_id).log_offset) == ("succeeded", len(log))
        assert [n.reachable for n in rig.notices if isinstance(n, HostReachabilityChanged)] == [True]
        assert rig.transport.connects == 1

    def test_backoff_doubles_up_to_its_ceiling_and_resets(self) -> None:
        """0.5, 1, 2, … capped at the maximum; a success starts again from the first delay."""
        backoff = Backoff(first_s=0.5, max_s=3.0, delay_s=0.5)
        assert [backoff.next() for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
        backoff.reset()
        assert backoff.next() == 0.5


class TestSlurmState:
    async def test_the_schedulers_state_is_kept_and_a_started_job_is_running(self, rig: Rig) -> None:
        """A launching Slurm run: its pending reason is recorded; once started it is running, with job and node."""
        run_id, job = rig.add_run(lines("h", 2), status=RunStatus.LAUNCHING)
        job.started, job.alive = False, False
        job.scheduler = {"job_id": "41", "state": "PENDING", "reason": "Resources", "node": None}
        task = asyncio.create_task(rig.monitor(run_id).run(until_done=True))
        await until(lambda: (rig.run(run_id).scheduler_state or {}).get("reason") == "Resources", "the pending reason")
        assert rig.run(run_id).status == "launching"
        job.started, job.alive = True, True
        job.scheduler = {"job_id": "41", "state": "RUNNING", "reason": None, "node": "n1"}
        await until(lambda: rig.run(run_id).status == "running", "the job to be running")
        job.exit(0)
        job.scheduler = {"job_id": "41", "state": "COMPLETED", "reason": None, "node": "n1"}
        await asyncio.wait_for(task, 10)
        states = [(d["state"], d["reason"], d["node"]) for d in rig.event_data(run_id, "scheduler_state")]
        assert states == [("PENDING", "Resources", None), ("RUNNING", None, "n1"), ("COMPLETED", None, "n1")]
        [started, ended] = rig.event_data(run_id, "status")
        assert (started["to"], started["slurm_job_id"], started["node"]) == ("running", "41", "n1")
        assert (ended["to"], ended["scheduler"]["state"]) == ("succeeded", "COMPLETED")
