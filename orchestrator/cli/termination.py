"""SIGTERM for a process that is not ready to stop cleanly yet (``eorch daemon`` while it imports and opens
the history): the signal is recorded, not obeyed, until the process installs its real handler and asks."""

from __future__ import annotations

import signal
from types import FrameType


class TermRecorder:
    """A SIGTERM handler that only remembers that the signal came."""

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True


def record_term() -> TermRecorder:
    """From now on a SIGTERM is recorded; returns the recorder (also ``signal.getsignal(SIGTERM)``)."""
    recorder = TermRecorder()
    signal.signal(signal.SIGTERM, recorder)
    return recorder


def term_recorder() -> TermRecorder | None:
    """The recorder installed by ``record_term``, if it is still the SIGTERM handler."""
    handler = signal.getsignal(signal.SIGTERM)
    return handler if isinstance(handler, TermRecorder) else None
