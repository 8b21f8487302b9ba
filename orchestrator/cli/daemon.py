"""`eorch daemon`: the monitor, headless, for every host, forever; alerts go to the configured channels."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated

import typer

from orchestrator.cli.common import context
from orchestrator.context import Context
from orchestrator.monitor import Monitor
from orchestrator.monitorlock import MonitorLock

log = logging.getLogger("eorch.daemon")


async def serve(ctx: Context, poll_interval: float | None = None) -> None:
    """Follow every active run (new ones included) until SIGTERM/SIGINT, holding the monitor lock."""
    from orchestrator.alerts import monitor_listeners

    listeners = monitor_listeners(ctx, bell=False)
    with MonitorLock(ctx.settings.monitor_lock):
        log.info("eorch daemon following runs (history %s)", ctx.settings.db_path)
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            if task is not None:
                loop.add_signal_handler(sig, task.cancel)
        try:
            await Monitor(ctx, listeners=listeners, poll_interval=poll_interval).run(forever=True)
        except asyncio.CancelledError:
            log.info("eorch daemon stopping; the jobs keep running")


def daemon(
    poll_interval: Annotated[float | None, typer.Option(help="seconds between liveness checks")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log every alert delivery")] = False,
) -> None:
    """Run the monitor headless for all hosts (for a systemd/launchd user service); one monitor at a time."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apprise").setLevel(logging.ERROR)
    asyncio.run(serve(context(), poll_interval))


def register(app: typer.Typer) -> None:
    app.command()(daemon)
