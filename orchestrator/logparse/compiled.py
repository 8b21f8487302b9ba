"""The parser compiled to C by mypyc, used when a build of exactly these sources is installed.

The parser is plain typed Python.  ``scripts/build_parser.py`` (run by ``make parser``) compiles its modules
with mypyc into ``<sys.prefix>/eorch-native``, with a stamp: the digest of the package's sources and the
interpreter's tag.  When ``orchestrator.logparse`` is imported, ``install`` puts a finder in front of the
usual ones that loads those extension modules, only when the stamp matches the sources as they are now.  A
stale build (a source edited or pulled since) is never run: the Python modules are, with the same verdicts,
slower (the compiled ones are about 1.4-1.7x as fast: ``bench/logparse_bench.py``).
``EORCH_COMPILED_PARSER=0`` forces the Python modules.

Not compiled: this module, the package's ``__init__``, ``analyze`` (a subclass of ``OSError``) and ``events``
(class variables on dataclasses), which mypyc does not support; the compiled modules call them as Python.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ENV = "EORCH_COMPILED_PARSER"
PACKAGE = "orchestrator.logparse"
SOURCE_DIR = Path(__file__).resolve().parent
UNCOMPILED = frozenset({"__init__", "analyze", "compiled", "events"})
STAMP = "stamp.json"


def native_dir() -> Path:
    """Where the build of this interpreter environment lives (a venv's own: the modules are built for it)."""
    return Path(sys.prefix) / "eorch-native"


def compiled_modules() -> list[str]:
    """The module names mypyc compiles, sorted."""
    return sorted(f"{PACKAGE}.{p.stem}" for p in SOURCE_DIR.glob("*.py") if p.stem not in UNCOMPILED)


def sources_digest() -> str:
    """Digest of every source of the package, compiled or not (a compiled module relies on the shape of the
    others)."""
    h = hashlib.sha256()
    for path in sorted(SOURCE_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def interpreter_tag() -> str:
    return f"{sys.implementation.cache_tag}-{sys.platform}"


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules (and mypyc's shared library module) at their built paths."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(fullname, file)


_finder: _Finder | None = None


def usable_build(root: Path) -> dict[str, Path] | None:
    """The module files of the build in ``root`` when its stamp matches these sources and this interpreter."""
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("digest") != sources_digest() or stamp.get(
            "interpreter") != interpreter_tag() or not isinstance(stamp.get("files"), dict):
        return None
    files = {str(name): root / str(rel) for name, rel in stamp["files"].items()}
    if set(compiled_modules()) - set(files) or not all(f.is_file() for f in files.values()):
        return None
    return files


def install() -> bool:
    """Put the finder of a usable build in front of ``sys.meta_path`` (before any compiled module is
    imported); whether the compiled parser is in use."""
    global _finder
    if _finder is not None:
        return True
    if os.environ.get(ENV, "1") == "0" or any(name in sys.modules for name in compiled_modules()):
        return False
    files = usable_build(native_dir())
    if files is None:
        return False
    _finder = _Finder(files)
    sys.meta_path.insert(0, _finder)
    return True


def in_use() -> bool:
    """Whether the parser's modules are the compiled ones."""
    return _finder is not None
