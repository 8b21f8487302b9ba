"""The import-linter contracts name every module they are meant to cover (a new module cannot slip past them)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The only parts of the controller that may import SQLAlchemy.
SPEAK_SQL = {"orchestrator.store", "orchestrator.services"}


def _contract(name_starts: str) -> dict[str, object]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"].startswith(name_starts))


def _top_level(package: str) -> set[str]:
    folder = ROOT / package
    return {f"{package}.{p.stem}" for p in folder.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}


def test_everything_but_the_store_and_the_services_is_kept_off_sqlalchemy() -> None:
    contract = _contract("Only the store and the service layer speak SQLAlchemy")
    assert contract["forbidden_modules"] == ["sqlalchemy"]
    listed = set(contract["source_modules"])  # type: ignore[call-overload]
    assert listed == (_top_level("orchestrator") - SPEAK_SQL) | {"tui", "worker"}
