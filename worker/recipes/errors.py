"""How a recipe step ends badly: ``StepFailed`` (the step and one line why) and ``Cancelled`` (SIGTERM); how a
child's exit status reads in its message (``exit_text``)."""

from __future__ import annotations

import signal
from typing import Any

from worker.events import Step


class StepFailed(Exception):
    """``detail``: evidence for the step's ``failed`` event (e.g. the first-sample gate's checks)."""

    def __init__(self, step: Step, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.step = step
        self.detail = detail


class Cancelled(BaseException):
    """SIGTERM arrived; unwinds to the cleanup in ``run``."""


def exit_text(rc: int) -> str:
    """A child's exit status as a step's message shows it: ``-9: killed by SIGKILL (the OOM killer?)``."""
    if rc >= 0:
        return str(rc)
    try:
        name = signal.Signals(-rc).name
    except ValueError:
        return str(rc)
    return f"{rc}: killed by {name}" + (" (the OOM killer?)" if name == "SIGKILL" else "")
