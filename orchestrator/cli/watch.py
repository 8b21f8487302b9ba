"""`eorch watch`: follow active runs in the foreground, record everything, show progress."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from orchestrator.cli.common import console, context
from orchestrator.context import Context
from orchestrator.core.clock import utcnow
from orchestrator.core.freshness import QUIET_AFTER_S, eta_text, last_output_text, quiet_for
from orchestrator.core.notices import (
    HostReachabilityChanged,
    LogTruncated,
    Notice,
    RunProgressed,
    RunStatusChanged,
)
from orchestrator.core.runstate import RunStatus, shown_phase
from orchestrator.errors import MonitorBusy, UsageError
from orchestrator.logparse.events import message_shown, name_shown
from orchestrator.monitoring.lock import follow_or_read
from orchestrator.monitoring.monitor import Monitor
from orchestrator.services import runs as run_service
from orchestrator.services.runview import RunView

TICK_S = 5.0


def _describe_end(run: RunView) -> str:
    text = f"run {run.id} ({run.name}) {run.status}"
    if run.exit_code is not None:
        text += f", exit {run.exit_code}"
    cause = run.root_cause or {}
    if cause:
        text += f" — root cause: {name_shown(cause)}: {message_shown(cause)}"
        if cause.get("process"):
            text += f" [{cause['process']}]"
        if cause.get("signature"):
            from orchestrator.logparse import signature_hint

            text += f"\n  {cause['signature']}: {signature_hint(cause['signature']) or ''}"
        text += f"\n  details: eorch show {run.id}"
    return text


class Printer:
    """Turns monitor notices into terminal output: live bars on a terminal, plain lines otherwise."""

    def __init__(self, ctx: Context, out: Console) -> None:
        self.ctx = ctx
        self.out = out
        self.live = out.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[when]}", markup=False),
            console=out, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.last: dict[str, tuple[Any, ...]] = {}
        self.told_quiet: set[str] = set()
        self._last_tick = 0.0

    def _line(self, text: str) -> None:
        (self.progress.console if self.live else self.out).print(text, highlight=False, markup=False)

    def __call__(self, notice: Notice) -> None:
        if isinstance(notice, HostReachabilityChanged):
            self._line(f"host {notice.host} {'reachable' if notice.reachable else 'UNREACHABLE: ' + str(notice.error)}")
            return
        if isinstance(notice, LogTruncated):
            self._line(f"run {notice.run_id}: log truncated ({notice.old_offset} → {notice.new_size} bytes); restarted")
            return
        found = run_service.find(self.ctx, [notice.run_id])
        if not found:
            return
        run = found[0]
        if isinstance(notice, RunStatusChanged):
            self._line(_describe_end(run) if RunStatus(run.status).is_terminal() else f"run {run.id} {run.status}")
            self._update(run)
        elif isinstance(notice, RunProgressed):
            self._update(run)

    def tick(self, monitor: object = None) -> None:
        """Every few seconds: the ETA counts down from the last output, "overdue" and "last output 12m ago" appear."""
        if time.monotonic() - self._last_tick < TICK_S:
            return
        self._last_tick = time.monotonic()
        for run in run_service.find(self.ctx, list(self.last)):
            self._update(run, force=True)

    def _when(self, run: RunView) -> str:
        """`ETA 4m19s · last output 3m10s ago`, `overdue 8m · last output 12m ago`, or "" while output flows."""
        if RunStatus(run.status).is_terminal():
            return ""
        now = utcnow()
        words = []
        if run.last_output_at is None:
            return ""  # not confirmed on the host yet: an ETA now would be the log's, however old
        if run.shards_total and (run.shards_done or 0) < run.shards_total and not run.progress_total:
            words.append(eta_text(run.shards_eta_s, run.last_output_at, now))
        quiet = quiet_for(run.last_output_at, now)
        if quiet is not None and quiet >= QUIET_AFTER_S:
            words.append(last_output_text(run.last_output_at, now))
        return " · ".join(w for w in words if w)

    def _update(self, run: RunView, force: bool = False) -> None:
        total: int | None
        if run.progress_total:
            done, total, what = run.progress_done or 0, run.progress_total, "samples"
        else:
            done, total, what = run.shards_done or 0, run.shards_total, "shards"
        phase = shown_phase(run.status, run.phase, run.kind)
        state = (phase, run.status, done, total)
        if self.last.get(run.id) == state and not force:
            return
        previous = self.last.get(run.id)
        self.last[run.id] = state
        label = f"{run.id} {run.name[:24]}" + (f" · {phase}" if phase else "")
        when = self._when(run)
        if self.live:
            task = self.tasks.get(run.id)
            if task is None:
                self.tasks[run.id] = self.progress.add_task(label, total=total, completed=done, when=when)
            else:
                self.progress.update(task, description=label, total=total, completed=done, when=when)
            return
        if phase and (previous is None or previous[0] != phase):
            self._line(f"run {run.id} phase {phase}")
        if total and (previous is None or previous[2] != done or previous[3] != total):
            self._line(f"run {run.id} {what} {done}/{total}" + (f" · {when}" if when else ""))
        elif force and "last output" in when and run.id not in self.told_quiet:
            self.told_quiet.add(run.id)  # once per quiet spell, not every tick
            self._line(f"run {run.id} {what} {done}/{total} · {when}" if total else f"run {run.id} {when}")
        if "last output" not in when:
            self.told_quiet.discard(run.id)


async def _read_only(ctx: Context, refs: list[str], printer: Printer, until_done: bool,
                     forever: bool = False) -> None:
    """Another monitor records; we only show what the history says (new runs too, with ``forever``)."""
    seen: dict[str, str] = {}
    while True:
        if refs:
            runs = [run_service.get(ctx, r) for r in refs]
        else:  # the active runs, and those seen active before (to tell how they ended)
            runs = run_service.active(ctx)
            active = {r.id for r in runs}
            runs += run_service.find(ctx, [i for i in seen if i not in active])
        for run in runs:
            if seen.get(run.id) != run.status:
                if run.id in seen:
                    printer(RunStatusChanged(run.id, seen[run.id], run.status))
                seen[run.id] = run.status
            printer(RunProgressed(run.id))
        printer.tick()
        if all(RunStatus(r.status).is_terminal() for r in runs) and (until_done or not refs) and not forever:
            return
        await asyncio.sleep(0.5)


def watch(
    runs: Annotated[list[str] | None, typer.Argument(help="runs to watch (default: all active runs)")] = None,
    until_done: Annotated[bool, typer.Option("--until-done", help="return when the runs are terminal; "
                                             "exit 0 only if all succeeded")] = False,
    all_: Annotated[bool, typer.Option("--all", help="follow every run, new ones included, until Ctrl-C (even "
                                       "when none is active yet)")] = False,
) -> None:
    """Follow active runs: record their logs and status, show progress. Ctrl-C stops watching, not jobs."""
    refs = list(runs or [])
    if all_ and (refs or until_done):
        raise UsageError("--all follows every run until Ctrl-C; give no run ids and no --until-done with it")
    ctx = context()
    named = [run_service.resolve(ctx, r) for r in refs]
    watched = named or run_service.active_ids(ctx)
    printer = Printer(ctx, console)
    listeners: list[Callable[[Notice], None]] = [printer]
    listeners += _extra_listeners(ctx)
    if not watched and not all_:
        console.print("no active runs (`eorch watch --all` waits for new ones)")
        return
    if all_:
        console.print("following every run, new ones included; Ctrl-C stops watching, never the jobs")

    async def follow() -> None:
        for run_id in watched:
            printer(RunProgressed(run_id))
        await Monitor(ctx, run_refs=named, listeners=listeners).run(until_done=until_done, forever=all_)

    async def read(busy: MonitorBusy) -> None:
        console.print(f"{busy} — showing the history read-only", markup=False)
        await _read_only(ctx, named, printer, until_done, forever=all_)

    async def main() -> None:
        await follow_or_read(ctx.settings.monitor_lock, follow, read)

    try:
        if printer.live:
            with Live(printer.progress, console=console, refresh_per_second=4, transient=False):
                asyncio.run(main())
        else:
            asyncio.run(main())
    except KeyboardInterrupt:
        console.print("stopped watching; the jobs keep running (resume with `eorch watch`)")
        raise typer.Exit(130) from None
    final = {r.id: r for r in run_service.find(ctx, watched)}
    if until_done and not all(r in final and final[r].status == RunStatus.SUCCEEDED.value for r in watched):
        raise typer.Exit(1)


def _extra_listeners(ctx: Context) -> list[Callable[[Notice], None]]:
    """Alert dispatch plugs in here when configured (orchestrator.alerts)."""
    from orchestrator.alerts.engine import monitor_listeners

    return list(monitor_listeners(ctx, bell=True))


def register(app: typer.Typer) -> None:
    app.command()(watch)
