"""The recipe's steps as a checklist (prepare → serve → gate → extract → verify → stop), from its step events.

Pure: takes the ``step`` events the recipe wrote to ``events.jsonl`` (as stored, oldest first) and says, per
step, its state and how long it took, the way `gh run view` lists a workflow's steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.core.humanize import span

ORDER = ("canary", "prepare", "serve", "gate", "extract", "verify", "stop")
MARKS = {"done": "✓", "failed": "✗", "skipped": "-", "started": "…", "pending": " "}


@dataclass(frozen=True)
class StepLine:
    step: str
    state: str  # started | done | failed | skipped
    seconds: float | None  # from started to its end; None while it runs or when it never started

    def text(self) -> str:
        took = f" {span(self.seconds)}" if self.seconds is not None else ""
        return f"{MARKS.get(self.state, '?')} {self.step}{took}"


def recipe_steps(events: Iterable[Mapping[str, Any]]) -> tuple[StepLine, ...]:
    """One line per step the recipe reported, in the recipe's order."""
    started: dict[str, float] = {}
    lines: dict[str, StepLine] = {}
    for event in events:
        if event.get("kind") != "step" or not isinstance(event.get("step"), str):
            continue
        step, state, ts = event["step"], str(event.get("state")), event.get("ts")
        if state == "started":
            if isinstance(ts, int | float):
                started[step] = float(ts)
            lines[step] = StepLine(step, "started", None)
            continue
        begun = started.get(step)
        seconds = float(ts) - begun if begun is not None and isinstance(ts, int | float) else None
        lines[step] = StepLine(step, state, seconds)
    return tuple(sorted(lines.values(), key=lambda line: (ORDER.index(line.step) if line.step in ORDER
                                                          else len(ORDER), line.step)))


def checklist(lines: Iterable[StepLine]) -> str:
    """`✓ serve 21s · ✓ extract 3s · ✗ verify 0s`."""
    return " · ".join(line.text() for line in lines)
