"""How a recipe step ends badly: ``StepFailed`` (the step and one line why) and ``Cancelled`` (SIGTERM)."""

from __future__ import annotations

from worker.events import Step


class StepFailed(Exception):
    def __init__(self, step: Step, message: str) -> None:
        super().__init__(message)
        self.step = step


class Cancelled(BaseException):
    """SIGTERM arrived; unwinds to the cleanup in ``run``."""
