from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from seed import NOW, seed

from orchestrator.context import Context
from tui.app import EorchApp

REFRESH_S = 0.1  # ≥ 50 ms: Pilot waits for idle after every key press


@pytest.fixture
def tui_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'[local]\nroot = "{tmp_path / "local-root"}"\n')
    monkeypatch.setenv("EORCH_HOME", str(home))
    return home


@pytest.fixture
def ctx(tui_home: Path) -> Iterator[Context]:
    yield Context.load()


@pytest.fixture
def seeded(ctx: Context, tmp_path: Path) -> dict[str, str]:
    return seed(ctx, tmp_path / "local-root")


@pytest.fixture
def make_app(ctx: Context, seeded: dict[str, str]):
    def make(**kw: object) -> EorchApp:
        kw.setdefault("clock", lambda: NOW)
        kw.setdefault("refresh_s", REFRESH_S)
        kw.setdefault("monitor", "off")
        return EorchApp(ctx, **kw)  # type: ignore[arg-type]

    return make
