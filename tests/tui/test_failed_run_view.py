"""A failed run opens on why it failed; without an exception, on its first error line and its log's tail."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from seed import NOW
from textual.widgets import Static, TabbedContent

from orchestrator.context import Context
from orchestrator.logparse import LogParser
from orchestrator.logparse.runs import RunSplitter
from orchestrator.store.models import Run
from tui.screens.run_detail import RunDetailScreen

PLAIN_LOG = b"starting\n" + b"".join(f"step {i}\n".encode() for i in range(12)) + b"error: something bad\n"


def add_plain_failure(ctx: Context, local_root: Path) -> str:
    """A command that wrote `error: something bad` and exited 3, as the follower records it."""
    run_dir = local_root / "runs" / "ff00ff00"
    run_dir.mkdir(parents=True)
    (run_dir / "log").write_bytes(PLAIN_LOG)
    add_ended_run(ctx, "ff00ff00", "plain-fail", PLAIN_LOG, LogParser(), status="failed", phase="starting",
                  exit_code=3, remote_dir=str(run_dir))
    return "ff00ff00"


def add_ended_run(ctx: Context, run_id: str, name: str, log: bytes, parser: LogParser | RunSplitter,
                  **fields: object) -> None:
    """A command's run that ended five minutes after it started, its whole ``log`` read by ``parser``."""
    parser.feed(log)
    parser.finish()
    with ctx.db() as s:
        s.add(Run(id=run_id, name=name, host="local", kind="command", command=["./job.sh"], env={},
                  created_at=NOW - timedelta(minutes=5), started_at=NOW - timedelta(minutes=5),
                  ended_at=NOW - timedelta(minutes=4), log_offset=len(log), events_offset=0, cancel_requested=False,
                  parser_state=parser.snapshot(), **fields))


async def until(pilot, predicate, what: str, tries: int = 250) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class TestFailureEvidence:
    async def test_failed_run_without_exception_shows_first_error_line_and_tail(
            self, make_app, ctx: Context, tmp_path: Path) -> None:
        """The cause tab is open and shows the error line and the last lines, not just "no exception"."""
        run_id = add_plain_failure(ctx, tmp_path / "local-root")
        app = make_app(open_run=run_id)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert app.screen.query_one(TabbedContent).active == "cause-tab"
            cause = str(app.screen.query_one("#cause-text", Static).content)
            assert "first error line: error: something bad" in cause
            assert "step 11\nerror: something bad" in cause

    async def test_failed_run_with_a_root_cause_opens_on_it(self, make_app, seeded) -> None:
        app = make_app(open_run=seeded["failed"])
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert app.screen.query_one(TabbedContent).active == "cause-tab"

    async def test_running_run_opens_on_its_log(self, make_app, seeded) -> None:
        app = make_app(open_run=seeded["running"])
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            assert app.screen.query_one(TabbedContent).active == "log-tab"


class TestRecipeVerdict:
    async def test_recipe_steps_and_outputs_on_the_detail(self, make_app, ctx: Context, tmp_path: Path) -> None:
        """The recipe's steps as a checklist with times (as `gh run view` lists steps), then its outputs."""
        from orchestrator.store.queries import add_events

        with ctx.db() as s:
            s.add(Run(id="ab12cd34", name="extract", host="local", kind="eagle3-extract", command=["recipe"],
                      env={}, status="succeeded", phase="stopped", exit_code=0, created_at=NOW - timedelta(minutes=9),
                      started_at=NOW - timedelta(minutes=9), ended_at=NOW - timedelta(minutes=8), log_offset=0,
                      events_offset=0, cancel_requested=False,
                      outputs={"dir": "/data/hs", "samples": 24, "verified": True, "bytes": 3 * 2**20}))
            s.flush()
            add_events(s, "ab12cd34", [("step_step", None, {"kind": "step", "step": step, "state": state, "ts": ts})
                                       for step, state, ts in (("serve", "started", 0.0), ("serve", "done", 21.7),
                                                               ("extract", "started", 21.8), ("extract", "done", 25.4),
                                                               ("verify", "started", 25.4), ("verify", "done", 25.5))])
        app = make_app(open_run="ab12cd34")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            timeline = str(app.screen.query_one("#run-timeline", Static).content)
            assert "✓ serve 21s  ✓ extract 3s  ✓ verify 0s" in timeline
            assert "outputs: 24 samples · verified · 3.0 MiB · /data/hs" in timeline


class TestEarlierTries:
    async def test_a_run_that_recovered_from_a_failed_try_says_so(self, make_app, ctx: Context, tmp_path: Path) -> None:
        """A job that started vLLM again after a failed try and then stopped cleanly: not "nothing has failed",
        but the try that failed, on the cause tab (as `eorch show` lists it)."""
        real = Path(__file__).resolve().parents[1] / "data" / "real"
        log = ((real / "r27_flashinfer_import_typeerror_py311.log").read_bytes()
               + (real / "r20_dgxspark_dflash_clean_sigterm_shutdown.log").read_bytes())
        add_ended_run(ctx, "77aa77aa", "retried", log, RunSplitter(), status="succeeded", phase="stopped",
                      exit_code=0)
        app = make_app(open_run="77aa77aa")
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            header = str(app.screen.query_one("#run-header", Static).content)
            assert "try 2 of 2 in its log: 1 before it failed (the cause tab lists them)" in header
            cause = str(app.screen.query_one("#cause-text", Static).content)
            assert "No root cause in the last try" in cause
            assert "try 1 of 2 (lines 1-277): FAILED: TypeError: type 'array.array' is not subscriptable" in cause

    async def test_a_log_of_many_tries_is_numbered_as_the_analysis_numbers_it(self, make_app, ctx: Context,
                                                                             tmp_path: Path) -> None:
        """Twenty failed tries, then a clean one: the header counts all 21 and says how many of those listed
        failed; the cause tab numbers them 5-20 of 21, as `eorch log analyze` does, in one line (they failed
        alike)."""
        real = Path(__file__).resolve().parents[1] / "data" / "real"
        log = ((real / "r27_flashinfer_import_typeerror_py311.log").read_bytes() * 20
               + (real / "r20_dgxspark_dflash_clean_sigterm_shutdown.log").read_bytes())
        add_ended_run(ctx, "88bb88bb", "retried", log, RunSplitter(), status="succeeded", phase="stopped",
                      exit_code=0)
        app = make_app(open_run="88bb88bb")
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunDetailScreen) and app.screen.detail, "detail")
            header = str(app.screen.query_one("#run-header", Static).content)
            assert "try 21 of 21 in its log: 16 of the last 16 before it failed" in header
            cause = str(app.screen.query_one("#cause-text", Static).content)
            assert "tries 5-20 of 21 (lines " in cause and "), each: FAILED: TypeError: " in cause
            assert "of 17" not in cause
