"""How a recipe step ends badly: ``StepFailed`` (the step and one line why) and ``Cancelled`` (SIGTERM)."""

from __future__ import annotations

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
