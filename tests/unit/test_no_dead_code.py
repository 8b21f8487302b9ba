"""No function of the controller or the worker that nothing calls: parallel development left such scaffolding
(``commands.probe_python``, ``lines.line_bounds``, ``procs.children_of`` ...), which reads as if it mattered."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("orchestrator", "worker", "tui", "bench", "scripts", "migrations")  # what may call them; not tests


def _words() -> Counter[str]:
    words: Counter[str] = Counter()
    for top in PRODUCT:
        for path in (REPO / top).rglob("*.py"):
            words.update(re.findall(r"\b\w+\b", path.read_text(encoding="utf-8")))
    return words


def _called_by_python(name: str) -> bool:
    """A module's ``__getattr__`` (PEP 562) is called by the interpreter, never by name."""
    return name == "__getattr__"


def test_every_module_function_is_used_somewhere() -> None:
    """A top-level function named only by its own ``def`` is dead (registered ones carry a decorator)."""
    words = _words()
    dead = []
    for top in ("orchestrator", "worker"):
        for path in sorted((REPO / top).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.decorator_list \
                        and words[node.name] < 2 and not _called_by_python(node.name):
                    dead.append(f"{path.relative_to(REPO)}: {node.name}")
    assert dead == []
