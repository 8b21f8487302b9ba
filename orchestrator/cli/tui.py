"""`eorch tui`: the Textual dashboard (the tui package is imported only when the command runs)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import context


def tui(
    run: Annotated[str | None, typer.Argument(help="open this run's detail first")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="never follow runs in this process; only "
                                            "check the active runs' status now and then when no monitor "
                                            "runs, as `eorch runs` does")] = False,
    refresh: Annotated[float, typer.Option(help="seconds between history refreshes")] = 1.0,
) -> None:
    """Launch, watch and investigate runs in a terminal dashboard. Quitting never stops a job."""
    from tui.app import EorchApp

    ctx = context()
    if run is not None:
        from orchestrator.services import runs

        run = runs.resolve(ctx, run)
    EorchApp(ctx, refresh_s=refresh, monitor="check" if read_only else "auto", open_run=run).run()


def register(app: typer.Typer) -> None:
    app.command()(tui)
