"""`eorch daemon`: the monitor, headless, for every host, forever; alerts go to the configured channels."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated

import typer

from orchestrator.cli.common import context
from orchestrator.cli.termination import term_recorder
from orchestrator.context import Context
from orchestrator.errors import UsageError
from orchestrator.monitor import Monitor, MonitorLock

log = logging.getLogger("eorch.daemon")
MIN_POLL_S, MAX_POLL_S = 0.05, 86400.0


async def serve(ctx: Context, poll_interval: float | None = None) -> None:
    """Follow every active run (new ones included) until SIGTERM/SIGINT, holding the monitor lock.

    The stop handlers go in before anything is taken (the lock, a delivery): a TERM that came earlier, while
    the process started (see ``termination``), stops it here, cleanly, before it begins.
    """
    from orchestrator.alerts import monitor_listeners

    early = term_recorder()
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if task is not None:
            loop.add_signal_handler(sig, task.cancel)
    if early is not None and early.received:
        log.info("eorch daemon stopped before it started (SIGTERM)")
        return
    try:
        listeners = monitor_listeners(ctx, bell=False)
        with MonitorLock(ctx.settings.monitor_lock):
            log.info("eorch daemon following runs (history %s)", ctx.settings.db_path)
            await Monitor(ctx, listeners=listeners, poll_interval=poll_interval).run(forever=True)
    except asyncio.CancelledError:
        log.info("eorch daemon stopping; the jobs keep running")


def daemon(
    poll_interval: Annotated[float | None, typer.Option(help="seconds between liveness checks")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log every alert delivery")] = False,
) -> None:
    """Run the monitor headless for all hosts (for a systemd/launchd user service); one monitor at a time."""
    if poll_interval is not None and not MIN_POLL_S <= poll_interval <= MAX_POLL_S:  # nan fails both
        raise UsageError(f"--poll-interval must be between {MIN_POLL_S} and {MAX_POLL_S:.0f} seconds")
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apprise").setLevel(logging.ERROR)
    asyncio.run(serve(context(), poll_interval))


def register(app: typer.Typer) -> None:
    app.command()(daemon)
