"""The recipe's steps as a checklist with times, from its step events."""

from __future__ import annotations

from orchestrator.core.recipesteps import StepLine, checklist, recipe_steps


def ev(step: str, state: str, ts: float) -> dict:
    return {"kind": "step", "step": step, "state": state, "ts": ts, "detail": {}}


class TestRecipeSteps:
    def test_steps_in_recipe_order_with_times(self) -> None:
        events = [ev("serve", "started", 100.0), {"kind": "progress", "done": 1, "total": 2, "ts": 101.0},
                  ev("serve", "done", 121.7), ev("prepare", "skipped", 100.5), ev("extract", "started", 121.8),
                  ev("extract", "done", 125.4), ev("verify", "started", 125.4), ev("verify", "failed", 125.5)]
        lines = recipe_steps(events)
        assert [(line.step, line.state) for line in lines] == [
            ("prepare", "skipped"), ("serve", "done"), ("extract", "done"), ("verify", "failed")]
        assert round(lines[1].seconds or 0, 1) == 21.7
        assert checklist(lines) == "- prepare · ✓ serve 21s · ✓ extract 3s · ✗ verify 0s"

    def test_a_running_step_has_no_time_yet(self) -> None:
        assert recipe_steps([ev("extract", "started", 5.0)]) == (StepLine("extract", "started", None),)
        assert checklist(recipe_steps([ev("extract", "started", 5.0)])) == "… extract"

    def test_events_of_other_kinds_or_shapes_are_ignored(self) -> None:
        assert recipe_steps([{"kind": "outputs"}, {"kind": "step", "step": None}, {}]) == ()
