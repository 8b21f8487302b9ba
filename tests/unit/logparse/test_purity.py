"""orchestrator.logparse imports only the standard library (and itself), and Hyperscan where it is installed."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import orchestrator.logparse as pkg

PKG_DIR = Path(pkg.__file__).parent


def test_only_stdlib_imports() -> None:
    for path in PKG_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                ok = top in sys.stdlib_module_names or name.startswith("orchestrator.logparse")
                ok = ok or (path.name == "native.py" and name == "hyperscan")  # optional: guarded
                assert ok, f"{path.name} imports {name}"


def test_catalogue_ships_with_the_package() -> None:
    assert (PKG_DIR / "signatures.toml").is_file()


def test_every_exported_name_resolves_on_first_use() -> None:
    """The package imports its parts lazily (PEP 562): `__all__` and the name → module table must agree."""
    import orchestrator.logparse as package

    assert set(package.__all__) == set(package._WHERE)
    for name in package.__all__:
        assert getattr(package, name) is not None


def test_the_native_search_is_optional() -> None:
    """Without hyperscan installed the parser still imports and parses (the pure funnel)."""
    import subprocess

    code = ("import sys; sys.modules['hyperscan'] = None\n"
            "from orchestrator.logparse import analyze_bytes, native\n"
            "assert not native.available()\n"
            "a = analyze_bytes(b'Traceback (most recent call last):\\n  File \"x\", line 1\\nValueError: bad\\n')\n"
            "print(a.root_cause.exception)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ValueError"
