"""`m` on a run: mute its alerts, or unmute them (orchestrator.services.mutes, as `eorch alerts mute|unmute`), off the UI
loop; the answer is a toast."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.app import App
from textual.screen import Screen

from orchestrator.context import Context
from orchestrator.errors import EorchError


def toggle_mute(screen: Screen[Any], ctx: Context, run_id: str) -> None:
    screen.run_worker(partial(_toggle, screen.app, ctx, run_id), thread=True, group="mute")


def _toggle(app: App[object], ctx: Context, run_id: str) -> None:
    from orchestrator.services.mutes import toggle_muted

    try:
        muted = toggle_muted(ctx, run_id)
    except EorchError as err:
        app.notify(str(err), title=f"could not change the alerts of run {run_id}", severity="error")
        return
    app.notify(f"alerts of run {run_id} muted (m again, or the alert settings, turns them back on)" if muted
               else f"alerts of run {run_id} on again")  # App.notify is thread-safe
