"""A worker's unexpected exception shows a modal with the error; the dashboard stays.

Every ``@work`` of the TUI runs with ``exit_on_error=False``; the node that started the worker gets its
``Worker.StateChanged`` (it does not bubble), so the app, each screen and each widget that runs workers
mixes this in. Expected failures (``EorchError``) are handled where they happen; this is for the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from textual.app import App


def describe(worker: Worker[object]) -> tuple[str, str]:
    """The modal's title and body: what failed, and the error."""
    error = worker.error
    return (f"Something went wrong ({worker.group or worker.name})",
            f"{type(error).__name__}: {error}\n\nThe dashboard goes on; what that view shows may be out of date.")


class ReportsWorkerErrors:
    app: App[object]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        from tui.screens.confirm import MessageScreen

        title, body = describe(event.worker)
        self.app.push_screen(MessageScreen(title, body))
