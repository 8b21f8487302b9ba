"""The followers of one host's active runs: started, supervised, drained at the end, stopped.

Each run has a log follower (``orchestrator.monitoring.follower.LogFollower``) and, for a recipe run, a step-event
follower, each an asyncio task. A follower that died is dropped (the next round starts a new one from the
committed offset); one that died of a lost link ends the round (the host watcher reconnects). Draining
reads a log to the size it had when the process ended: a drain that times out while the follower still
makes progress is a long backlog, not a failure; after ``MAX_DRAIN_ATTEMPTS`` failed ones the run is
settled anyway, with a ``log_not_drained`` event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from orchestrator.context import Context
from orchestrator.core.notices import Notice
from orchestrator.errors import HostError
from orchestrator.monitoring.follower import LogFollower, StepEventFollower
from orchestrator.remote.hosts import HostSession
from orchestrator.store import queries
from orchestrator.store.models import Run
from worker.protocol import RunStatusReport

log = logging.getLogger("eorch.monitor")

DRAIN_TIMEOUT_S = 30.0
MAX_DRAIN_ATTEMPTS = 3


@dataclass
class Followed:
    log: LogFollower
    steps: StepEventFollower | None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()

    def failure(self) -> BaseException | None:
        """The error a follower task died of, if one did."""
        for task in self.tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return task.exception()
        return None


class Followers:
    def __init__(self, ctx: Context, notify: Callable[[Notice], None], drain_timeout_s: float | None = None) -> None:
        self.ctx = ctx
        self.notify = notify
        self.drain_timeout_s = drain_timeout_s  # None: DRAIN_TIMEOUT_S
        self.followed: dict[str, Followed] = {}
        self.drain_attempts: dict[str, int] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.followed

    def get(self, run_id: str) -> Followed | None:
        return self.followed.get(run_id)

    def follow(self, session: HostSession, run: Run) -> Followed:
        """Start following the run from its committed offset."""
        log_follower = LogFollower(self.ctx, session, run, self.notify)
        steps = StepEventFollower(self.ctx, session, run, self.notify) if run.kind == "eagle3-extract" else None
        followed = Followed(log_follower, steps)
        followed.tasks.append(asyncio.create_task(log_follower.run(), name=f"log-{run.id}"))
        if steps is not None:
            followed.tasks.append(asyncio.create_task(steps.run(), name=f"steps-{run.id}"))
        self.followed[run.id] = followed
        return followed

    def follow_all(self, session: HostSession, runs: Iterable[Run]) -> None:
        """Check the followers there are, then follow the runs that have none (a new run, a died follower)."""
        for run_id, followed in list(self.followed.items()):
            self._check(run_id, followed)
        for run in runs:
            if run.id not in self.followed:
                self.follow(session, run)

    def read_so_far(self, run_ids: Iterable[str]) -> dict[str, int]:
        """What each log follower has read (bytes handed to its parser)."""
        return {run_id: self.followed[run_id].log.fed for run_id in run_ids}

    def _check(self, run_id: str, followed: Followed) -> None:
        """A follower that died is restarted from the committed offset; a lost link ends this round."""
        error = followed.failure()
        if error is None:
            return
        self.drop(run_id)
        if isinstance(error, HostError):
            raise error
        log.error("following run %s failed, restarting from the committed offset: %r", run_id, error)

    def drop(self, run_id: str) -> Followed | None:
        """Stop following the run (its tasks are cancelled, not awaited)."""
        followed = self.followed.pop(run_id, None)
        if followed is not None:
            followed.cancel()
        return followed

    def stop_all(self) -> list[asyncio.Task[None]]:
        """Cancel every follower; the tasks are returned to be awaited."""
        tasks = [task for followed in self.followed.values() for task in followed.tasks]
        for followed in self.followed.values():
            followed.cancel()
        self.followed.clear()
        return tasks

    async def drained(self, run: Run, followed: Followed, live: RunStatusReport) -> bool:
        """Read the log (and step events) up to the size they had when the process ended."""
        followed.log.stream.drain_to(live.log_size or 0)
        if followed.steps is not None:
            followed.steps.stream.drain_to(live.events_size or 0)
        read_before = followed.log.fed
        timeout = DRAIN_TIMEOUT_S if self.drain_timeout_s is None else self.drain_timeout_s
        _, pending = await asyncio.wait(followed.tasks, timeout=timeout)
        error = followed.failure()
        if not pending and error is None:
            return True
        if error is None and followed.log.fed > read_before:
            return False  # a long backlog, still being read: keep following, it is no failed attempt
        self.drop(run.id)
        attempts = self.drain_attempts[run.id] = self.drain_attempts.get(run.id, 0) + 1
        if isinstance(error, HostError):
            raise error
        if attempts < MAX_DRAIN_ATTEMPTS:
            return False
        with self.ctx.db() as s:
            queries.add_event(s, run.id, "log_not_drained",
                              {"log_size": live.log_size, "error": repr(error) if error else "timed out"})
        return True
