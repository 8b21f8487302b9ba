"""`eorch daemon`: the monitor, headless, for every host; `eorch daemon install|uninstall|status` for the service.

Plain `eorch daemon` follows every active run (new ones included) forever, for a systemd/launchd user
service; `--until-idle` returns once no run is active (the background monitor `eorch launch` starts).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Annotated

import typer

from orchestrator.cli.common import console, context, print_json
from orchestrator.cli.termination import term_recorder
from orchestrator.context import Context
from orchestrator.errors import UsageError
from orchestrator.monitoring.lock import follow_or_read
from orchestrator.monitoring.lockfile import REFRESH_WAIT_S
from orchestrator.monitoring.monitor import Monitor

log = logging.getLogger("eorch.daemon")
MIN_POLL_S, MAX_POLL_S = 0.05, 86400.0


async def serve(ctx: Context, poll_interval: float | None = None, *, until_idle: bool = False,
                wait_lock_s: float = REFRESH_WAIT_S) -> None:
    """Follow every active run (new ones included) until SIGTERM/SIGINT (or, until_idle, none is active).

    The stop handlers go in before anything is taken (the lock, a delivery): a TERM that came earlier, while
    the process started (see ``termination``), stops it here, cleanly, before it begins.
    """
    from orchestrator.alerts.engine import monitor_listeners

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

        async def follow() -> None:
            log.info("eorch daemon following runs (history %s)", ctx.settings.db_path)
            await Monitor(ctx, listeners=listeners, poll_interval=poll_interval).run(forever=not until_idle)

        await follow_or_read(ctx.settings.monitor_lock, follow, wait_s=wait_lock_s)  # held: MonitorBusy
    except asyncio.CancelledError:
        log.info("eorch daemon stopping; the jobs keep running")


app = typer.Typer(help="Run the monitor headless for all hosts; install|uninstall|status manage its systemd/launchd user service.")


@app.callback(invoke_without_command=True)
def daemon(
    ctx_: typer.Context,
    poll_interval: Annotated[float | None, typer.Option(help="seconds between liveness checks")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log every alert delivery")] = False,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="return once no run is active")] = False,
    wait_lock: Annotated[float, typer.Option(help="seconds to wait for a reading command's short refresh to "
                                             "release the monitor lock")] = REFRESH_WAIT_S,
) -> None:
    """Run the monitor headless for all hosts (for a systemd/launchd user service); one monitor at a time."""
    if ctx_.invoked_subcommand is not None:
        return
    if poll_interval is not None and not MIN_POLL_S <= poll_interval <= MAX_POLL_S:  # nan fails both
        raise UsageError(f"--poll-interval must be between {MIN_POLL_S} and {MAX_POLL_S:.0f} seconds")
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apprise").setLevel(logging.ERROR)
    asyncio.run(serve(context(), poll_interval, until_idle=until_idle, wait_lock_s=wait_lock))


def _print(report: object, json_: bool) -> None:
    from dataclasses import asdict

    from orchestrator.monitoring.userservice import ServiceReport

    assert isinstance(report, ServiceReport)
    if json_:
        print_json(asdict(report))
        return
    if report.message:
        console.print(report.message, highlight=False)
    console.print(f"{report.manager} unit {report.path}: {'installed' if report.installed else 'not installed'} · "
                  f"enabled: {report.enabled} · running: {report.active}", highlight=False, markup=False)
    console.print(f"monitor lock: {report.monitor}", highlight=False, markup=False)


@app.command()
def install(
    enable: Annotated[bool, typer.Option(help="enable and start it now (systemctl --user / launchctl)")] = True,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Write the daemon's systemd user unit (launchd agent on macOS) for this user and enable it."""
    from orchestrator.monitoring import userservice as service

    _print(service.install(context().settings, enable=enable), json_)


@app.command()
def uninstall(json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """Stop and disable the daemon's user service and remove its unit file."""
    from orchestrator.monitoring import userservice as service

    _print(service.uninstall(context().settings), json_)


@app.command()
def status(json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """Whether the daemon's user service is installed, enabled and running, and who follows the runs now."""
    from orchestrator.monitoring import userservice as service

    _print(service.status(context().settings), json_)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="daemon")
