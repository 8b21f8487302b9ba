"""Every TUI worker reports an unexpected exception in a modal instead of quitting the dashboard."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TUI = Path(__file__).resolve().parents[2] / "tui"


def _work_decorators(cls: ast.ClassDef) -> list[ast.Call]:
    return [d for f in cls.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) for d in f.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "work"]


def _classes_with_workers() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted(TUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and _work_decorators(node):
                found.append((f"{path.relative_to(TUI.parent)}:{node.name}", node))
    return found


def test_the_tui_has_workers_to_check() -> None:
    assert len(_classes_with_workers()) >= 8


@pytest.mark.parametrize(("where", "cls"), _classes_with_workers(), ids=lambda v: v if isinstance(v, str) else "")
def test_workers_do_not_exit_and_their_errors_are_shown(where: str, cls: ast.ClassDef) -> None:
    for decorator in _work_decorators(cls):
        flags = {k.arg: k.value for k in decorator.keywords}
        assert isinstance(flags.get("exit_on_error"), ast.Constant) and flags["exit_on_error"].value is False, \
            f"{where}: @work at line {decorator.lineno} quits the dashboard on an unexpected exception"
    assert any(getattr(b, "id", None) == "ReportsWorkerErrors" for b in cls.bases), \
        f"{where} runs workers but does not mix in tui.worker_errors.ReportsWorkerErrors"
