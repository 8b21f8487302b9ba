"""The EAGLE-3 defaults are one table (worker/recipes/eagle3_defaults.py): the job spec's field defaults and the
recipe's fill-in for a hand-written spec.json cannot drift apart (they were kept twice, 25 keys, untied)."""

from __future__ import annotations

from orchestrator.core.spec import Eagle3Section
from worker.recipes import eagle3_plan
from worker.recipes.eagle3_defaults import CONTROLLER_CANARY, DEFAULTS

REQUIRED = {"model", "data", "output"}


def test_the_spec_has_a_default_for_every_key_of_the_table_and_no_other() -> None:
    """A key added on one side only (a new recipe option) fails here."""
    optional = {name for name, f in Eagle3Section.model_fields.items() if not f.is_required()}
    assert optional == set(DEFAULTS)
    assert {name for name, f in Eagle3Section.model_fields.items() if f.is_required()} == REQUIRED


def test_every_spec_default_is_the_table_s_but_the_canary() -> None:
    """Same values; only the canary differs, on purpose (a spec from `eorch launch` runs it by default)."""
    spec = Eagle3Section(model="/m", data="/d", output="/o").model_dump(mode="json")
    assert {k: v for k, v in spec.items() if k not in REQUIRED | {"canary"}} == \
        {k: v for k, v in DEFAULTS.items() if k != "canary"}
    assert spec["canary"] is CONTROLLER_CANARY and DEFAULTS["canary"] is False


def test_the_recipe_fills_in_from_the_same_table() -> None:
    assert eagle3_plan.DEFAULTS is DEFAULTS
