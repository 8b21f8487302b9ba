"""Through the real loopback sshd: a request the worker fails is that operation's error, not an unreachable
host; a run whose wrapper.json is corrupt is reported alone; a dropped channel is no end of file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import add_testbox, db_rows, eorch, launch
from sshd import Sshd

from orchestrator.context import Context
from orchestrator.errors import HostUnreachable, RemoteOpFailed, StreamBroken


class TestErrorReplies:
    def test_a_bad_request_fails_that_operation_and_the_agent_keeps_serving(self, eorch_home: Path,
                                                                            tmp_path: Path) -> None:
        """`status` with an argument it does not take, then one that makes the worker raise: each is a
        RemoteOpFailed (the old agent exited and the host was reported unreachable); the same agent then answers."""
        root = add_testbox(tmp_path)

        async def go() -> None:
            ctx = Context.load()
            try:
                session = await ctx.session("gpu")
                agent = session._agent
                with pytest.raises(RemoteOpFailed, match="bad arguments for 'status'") as refused:
                    await session.call("status", run_dir=str(root), nope=1)
                assert not isinstance(refused.value, HostUnreachable) and refused.value.kind == "refused"
                with pytest.raises(RemoteOpFailed, match="eorch's worker failed: TypeError") as crashed:
                    await session.call("status_many", run_dirs=5)
                assert crashed.value.crashed and ".py:" in crashed.value.where
                report = await session.status_many([str(root / "runs" / "none")])
                assert report.runs[0].exists is False and session._agent is agent
            finally:
                await ctx.close()

        asyncio.run(go())


class TestCorruptWrapperJson:
    def test_only_the_run_with_the_corrupt_file_goes_unconfirmed(self, eorch_home: Path, tmp_path: Path) -> None:
        """`eorch runs` refreshes both runs: the good one is confirmed running, the corrupt one keeps its status,
        with the host's reason recorded; the host stays reachable."""
        root = add_testbox(tmp_path)
        good, bad = launch("sleep", "300"), launch("sleep", "300")
        try:
            (root / "runs" / bad["id"] / "wrapper.json").write_text("[1, 2]")
            proc = eorch("runs", "--json")
            assert f"run {bad['id']}: its status cannot be read on gpu: wrapper.json holds a list" in proc.stderr
            listed = {r["id"]: r for r in json.loads(proc.stdout)}
            assert listed[good["id"]]["status"] == "running" and listed[good["id"]]["freshness"]["current"]
            assert listed[bad["id"]]["status"] == "running"
            assert db_rows(eorch_home, "SELECT reachable FROM hosts WHERE name = 'gpu'") == [(1,)]
            events = db_rows(eorch_home, "SELECT data FROM events WHERE run_id = ? AND kind = 'status_unreadable'",
                             bad["id"])
            assert [json.loads(e[0])["error"] for e in events] == [
                "wrapper.json holds a list, not the wrapper's identity"]
            eorch("runs", "--json")  # checked again: the same reason is not recorded twice
            assert len(db_rows(eorch_home, "SELECT id FROM events WHERE run_id = ? AND kind = 'status_unreadable'",
                               bad["id"])) == 1
        finally:
            eorch("cancel", good["id"], check=False)
            eorch("cancel", bad["id"], check=False)


class TestDroppedChannel:
    def test_a_dropped_connection_is_a_broken_stream_not_an_end(self, eorch_home: Path, tmp_path: Path,
                                                                sshd: Sshd) -> None:
        """The old read turned every channel error into b"", the end of file; now it raises StreamBroken."""
        add_testbox(tmp_path)

        async def go() -> None:
            ctx = Context.load()
            try:
                session = await ctx.session("gpu")
                proc = await session.transport.start(["sh", "-c", "echo started; exec sleep 300"])
                assert await proc.read(100) == b"started\n"
                sshd.kill_connections()
                with pytest.raises(StreamBroken):
                    await asyncio.wait_for(proc.read(100), 30)
            finally:
                await ctx.close()

        asyncio.run(go())
