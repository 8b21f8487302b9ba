"""Structured step events, one JSON object per line, for the controller to turn into phases and progress.

Stdlib only: this runs on the GPU host with its plain ``python3``.  Event shapes (exactly):

    {"ts", "kind": "step", "step": canary|prepare|serve|gate|extract|verify|stop, "state": started|done|failed|skipped,
     "detail": {...}}
    {"ts", "kind": "progress", "step": "extract", "done": int, "total": int, "rate": float | None}
    {"ts", "kind": "outputs", "dir": str, "samples": int, "verified": bool, "bytes": int, "stray_locks": [...],
     "client_errors": int, "first_client_error": str | None}
    {"ts", "kind": "result", "ok": bool, "error": str | None}
    {"ts", "kind": "canary", "state": started|succeeded|failed|cancelled, "seconds": float, "step": str | None,
     "error": str | None, "tiny": {...}, "log_tail": str}      (worker/recipes/canary.py)
    {"ts", "kind": "server_kept", "step", "error", "idle_timeout_s", "load_s", "port"}    (warmserver.py)
    {"ts", "kind": "retry", "attempt": int, "waited_s": float, "saved_load_s": float}
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import IO, Any, Literal

Step = Literal["canary", "prepare", "serve", "gate", "extract", "verify", "stop"]
StepState = Literal["started", "done", "failed", "skipped"]

EVENTS_FILE = "events.jsonl"


class EventWriter:
    """Appends events to a JSON-lines file, flushing after each line; thread-safe."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the run

    @classmethod
    def from_env(cls, run_dir: Path | None = None) -> EventWriter:
        """Writes to ``$EORCH_RUN_DIR/events.jsonl`` (or ``run_dir``); discards events when neither is set."""
        base = run_dir or (Path(os.environ["EORCH_RUN_DIR"]) if os.environ.get("EORCH_RUN_DIR") else None)
        return cls(base / EVENTS_FILE if base is not None else None)

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        event: dict[str, Any] = {"ts": time.time(), "kind": kind, **fields}
        line = json.dumps(event, sort_keys=False, default=str)
        with self._lock:
            if self._fh is not None:
                self._fh.write(line + "\n")
                self._fh.flush()
        return event

    def step(self, step: Step, state: StepState, **detail: Any) -> dict[str, Any]:
        return self.emit("step", step=step, state=state, detail=detail)

    def progress(self, done: int, total: int, rate: float | None, step: Step = "extract") -> dict[str, Any]:
        return self.emit("progress", step=step, done=done, total=total, rate=rate)

    def outputs(
        self, out_dir: str, samples: int, verified: bool, nbytes: int, stray_locks: list[str],
        client_errors: int = 0, first_client_error: str | None = None,
    ) -> dict[str, Any]:
        return self.emit(
            "outputs", dir=out_dir, samples=samples, verified=verified, bytes=nbytes, stray_locks=stray_locks,
            client_errors=client_errors, first_client_error=first_client_error,
        )

    def result(self, ok: bool, error: str | None) -> dict[str, Any]:
        return self.emit("result", ok=ok, error=error)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

