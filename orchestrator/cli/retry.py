"""`eorch retry RUN`: run the client of a --keep-server run again on its warm server (only missing samples)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import console, context, run_async
from orchestrator.services.launches import request_retry


def retry(run: Annotated[str, typer.Argument(help="run id, id prefix or name")]) -> None:
    """Run a kept server's client again: speculators resumes the missing samples, no model reload."""
    from orchestrator.services import runs

    found = runs.get(context(), run_async(lambda ctx: request_retry(ctx, run)).id)
    warm = found.warm_server or {}
    load = f" (it loaded in {warm['load_s']:.1f}s)" if isinstance(warm.get("load_s"), int | float) else ""
    console.print(f"retry requested: run {found.id} runs its client again on the warm server{load}; "
                  f"follow it: eorch watch {found.id}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(retry)
