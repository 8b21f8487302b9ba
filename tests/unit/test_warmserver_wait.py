"""The recipe's wait on a kept server (worker/recipes/warmserver.py) with a real child process as the server."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import read_events

from worker.events import EventWriter
from worker.recipes.errors import StepFailed
from worker.recipes.proc import Child
from worker.recipes.warmserver import RETRY_FILE, wait_for_retry


@pytest.fixture
def recipe(tmp_path: Path) -> Any:
    server = Child("server", ["sleep", "60"], dict(os.environ), tmp_path / "server.log", tee=False)
    r = SimpleNamespace(cfg={"keep_server_idle_s": 1.0, "port": 1}, run_dir=tmp_path, timings={"serve": 42.0},
                        events=EventWriter(tmp_path / "events.jsonl"), say=lambda m: None, server=server,
                        _server_dead=False, _server_failure=lambda what: f"{what} (exit code -9)")
    yield r
    server.stop(1.0)


FAILED = StepFailed("extract", "speculators generate-offline-data exited 1")


class TestWaitForRetry:
    def test_retry_file_ends_the_wait(self, recipe: Any) -> None:
        """`eorch retry` creates RUN_DIR/retry: the wait returns (and consumes it); server_kept was recorded."""
        recipe.cfg["keep_server_idle_s"] = 60.0
        threading.Timer(0.3, lambda: (recipe.run_dir / RETRY_FILE).touch()).start()
        waited = wait_for_retry(recipe, FAILED)
        assert 0.2 < waited < 30 and not (recipe.run_dir / RETRY_FILE).exists()
        kept = [e for e in read_events(recipe.run_dir / "events.jsonl") if e["kind"] == "server_kept"]
        assert kept and kept[0]["step"] == "extract" and kept[0]["load_s"] == 42.0

    def test_idle_timeout_fails_with_the_clients_error(self, recipe: Any) -> None:
        t0 = time.monotonic()
        with pytest.raises(StepFailed, match="exited 1; no retry within the idle timeout") as info:
            wait_for_retry(recipe, FAILED)
        assert info.value.step == "extract" and time.monotonic() - t0 >= 1.0

    def test_kept_server_dying_ends_the_wait(self, recipe: Any) -> None:
        recipe.cfg["keep_server_idle_s"] = 60.0
        threading.Timer(0.3, lambda: os.killpg(recipe.server.pgid, 9)).start()
        with pytest.raises(StepFailed, match="then the kept server died"):
            wait_for_retry(recipe, FAILED)
        assert recipe._server_dead is True

    def test_a_stale_retry_file_does_not_count(self, recipe: Any) -> None:
        """A retry file left from before the failure is dropped: only a request made while waiting counts."""
        (recipe.run_dir / RETRY_FILE).touch()
        with pytest.raises(StepFailed, match="idle timeout"):
            wait_for_retry(recipe, FAILED)
