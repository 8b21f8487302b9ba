"""SVG snapshots of the main screens at 80×24 and 120×40 over the seeded history and a fixed clock.

Update the baselines with `pytest tests/tui/test_snapshots.py --snapshot-update` after checking the report.
"""

from __future__ import annotations

import pytest

from tui.widgets.log_pane import LogPane
from tui.widgets.runs_table import RunsTable

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


async def settle(pilot, predicate) -> None:
    for _ in range(200):
        if predicate():
            break
        await pilot.pause(0.02)
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", SIZES)
def test_runs_screen(snap_compare, make_app, seeded, size) -> None:
    """You should see the runs table, newest first: eagle3-llama-8b running (cyan) and loading with a shard
    bar `12/35 11m`, serve-llama-70b failed (red) with root cause `cuda-oom`, train resnet succeeded (green)
    at 100/100, hs-extract-qwen cancelled (yellow), an earlier failed serve-llama-70b; ages 20m00s to 2d00h
    (at 80 columns: every short id whole, no host column, ages `20m` to `2d`, the bar without blocks);
    a status line `5 of 5 runs · 1 active · not following (history only)`; the footer with Filter, Launch,
    Hosts, History, Alerts and Quit."""
    app = make_app()

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.query_one(RunsTable).row_count == 5)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_run_detail_failed(snap_compare, make_app, seeded, size) -> None:
    """You should see run bb22cc33 serve-llama-70b on local, failed, exit 1, its `vllm serve …` command and
    start/end times; a full `shards 4/4` bar; the timeline `launch 1m00s → loading 18m00s → loaded 1m00s → end
    failed`; the Log tab with the vLLM log, the traceback lines in red, no escape codes and the literal
    `[bold]literal[/bold]`; the status line `following · 14 lines`."""
    app = make_app(open_run=seeded["failed"])

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: len(app.screen.query_one(LogPane).lines) == 14)
        await pilot.press("l")  # a failed run opens on its root cause
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_run_detail_failed_without_exception(snap_compare, make_app, ctx, tmp_path, size) -> None:
    """You should see run ff00ff00 plain-fail, failed, exit 3, opened on the Root cause tab: `The run failed
    and its log shows no exception.`, `first error line: error: something bad` and the log's last lines
    (`step 0` … `step 11`, `error: something bad`)."""
    from test_failed_run_view import add_plain_failure

    app = make_app(open_run=add_plain_failure(ctx, tmp_path / "local-root"))

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.detail is not None)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_run_detail_slurm_pending(snap_compare, make_app, seeded, ctx) -> None:
    """You should see run ff66aa77 sweep-queued on hpc, launching (cyan), no phase (a plain command); under it
    `Slurm job 48213 · PENDING (Resources)` with PENDING in yellow; the `$ python sweep.py` command; the timeline
    `launch …` and the log pane's `no log yet` note."""
    from seed import seed_slurm

    app = make_app(open_run=seed_slurm(ctx)["pending"])

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.detail is not None)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_run_detail_root_cause(snap_compare, make_app, seeded) -> None:
    """You should see the Root cause tab of bb22cc33: `torch.OutOfMemoryError: CUDA out of memory…` in red,
    `process EngineCore_DP0 pid=4242 · signature cuda-oom · log line 9`, `seen before in runs ee55ff66
    (serve-llama-70b, failed, 2025-01-08 12:00:00)` and the full traceback in red."""
    app = make_app(open_run=seeded["failed"])

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.detail is not None)
        await pilot.press("r")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_hosts_screen(snap_compare, make_app, seeded, size) -> None:
    """You should see two hosts: `gpu` reachable with `2× NVIDIA H200: 139.4, 62.3 GiB free` and 512.0 GiB
    disk, `local` unknown and not checked; below, gpu's facts one GPU a line."""
    app = make_app()

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.query_one(RunsTable).row_count == 5)
        await pilot.press("h")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_launch_screen(snap_compare, make_app, seeded) -> None:
    """You should see the launch form at 80×24: the host select, the command and spec fields, name and cwd
    side by side, env, the Launch button, with ctrl+s Launch in the footer."""
    app = make_app()

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: app.screen.query_one(RunsTable).row_count == 5)
        await pilot.press("n")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
