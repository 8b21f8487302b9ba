"""Cancel a run from any screen: ask first, cancel off the UI loop, tell the screen how it went.

The runs list and the run detail share this flow; the answer arrives at the screen as a ``RunCancelled`` or
``CancelFailed`` message, and `eorch cancel`'s service (``orchestrator.actions.cancel.cancel_run``) does the work.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from orchestrator.context import Context
from orchestrator.errors import EorchError
from orchestrator.services.runview import RunView
from tui.messages import CancelFailed, RunCancelled, RunsRefreshRequested
from tui.screens.confirm import ConfirmScreen


def ask_to_cancel(screen: Screen[Any], ctx: Context, row: RunView) -> None:
    """Confirm, then cancel ``row``'s run; a run that already ended is only told about."""
    if row.terminal:
        screen.notify(f"run {row.id} already ended ({row.status})", severity="warning")
        return

    def answered(yes: bool | None) -> None:
        if yes:
            screen.notify(f"cancelling run {row.id}…")
            screen.run_worker(_cancel(screen, ctx, row.id), exclusive=True, group="cancel", exit_on_error=False)

    screen.app.push_screen(ConfirmScreen(f"Cancel run {row.id} ({row.name})? Its processes get TERM, then KILL.",
                                         yes="Cancel run"), answered)


async def _cancel(screen: Screen[Any], ctx: Context, run_id: str) -> None:
    from orchestrator.actions.cancel import cancel_run

    try:
        result = await cancel_run(ctx, run_id)
    except EorchError as err:
        screen.post_message(CancelFailed(run_id, str(err)))
        return
    screen.post_message(RunCancelled(run_id, str(result.get("status"))))


def told_cancelled(screen: Screen[Any], message: RunCancelled) -> None:
    """What a screen does when its cancel came back: say so, refresh the runs."""
    screen.notify(f"run {message.run_id}: {message.status}, no process left")
    screen.post_message(RunsRefreshRequested())


def told_cancel_failed(screen: Screen[Any], message: CancelFailed) -> None:
    from tui.screens.confirm import MessageScreen

    screen.app.push_screen(MessageScreen(f"Could not cancel run {message.run_id}", message.error))
