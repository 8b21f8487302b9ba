"""The one retrying reader the log pane and the merged view share (`LogFeed.read_retrying`): a failed read
is said (`LogFollowFailed`) and tried again from the last line read, not from the start."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator.core.notices import LogLinesRead
from orchestrator.errors import EorchError
from tui import logfeed
from tui.logfeed import LogFeed
from tui.messages import LogFollowFailed, LogLinesReceived


class FlakyFeed(LogFeed):
    """`read` as a follower does it: lines announced, then (the first time) the link drops."""

    def __init__(self) -> None:
        super().__init__(lambda host: asyncio.sleep(0))  # type: ignore[arg-type,return-value]
        self.reads: list[tuple[int, bool]] = []

    async def read(self, host, run_id, log_path, offset, notify, *, until=None, skip_partial=True):  # type: ignore[no-untyped-def]
        self.reads.append((offset, skip_partial))
        if len(self.reads) == 1:
            notify(LogLinesRead(run_id, ("a", "b"), 10))
            raise EorchError("host gpu: connection lost")
        notify(LogLinesRead(run_id, ("c",), 12))


def test_a_failed_read_is_said_and_retried_from_the_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfeed, "RETRY_S", 0)
    feed, posted = FlakyFeed(), []
    asyncio.run(feed.read_retrying("gpu", "r1", "/runs/r1/log", 4, posted.append, skip_partial=True))
    assert feed.reads == [(4, True), (10, False)]
    assert [(type(m), getattr(m, "lines", None)) for m in posted] == [
        (LogLinesReceived, ("a", "b")), (LogFollowFailed, None), (LogLinesReceived, ("c",))]
    assert "connection lost" in posted[1].error
