"""The parser compiled by mypyc (``compiled.py``, ``scripts/build_parser.py``): used only when built from these
very sources for this interpreter, and its verdicts and events are the Python modules' on every real log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_bytes, compiled
from tests.unit.logparse.conftest import parse_all

DATA = Path(__file__).resolve().parents[2] / "data"
REPO = DATA.parents[1]


def _fake_build(root: Path, **stamp_changes: object) -> Path:
    files = {name: f"{name.replace('.', '/')}.so" for name in compiled.compiled_modules()}
    files["0123abc__mypyc"] = "0123abc__mypyc.so"
    for rel in files.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"")
    stamp = {"digest": compiled.sources_digest(), "interpreter": compiled.interpreter_tag(), "files": files}
    stamp.update(stamp_changes)
    (root / compiled.STAMP).write_text(json.dumps(stamp))
    return root


def test_a_build_of_these_sources_for_this_interpreter_is_usable(tmp_path: Path) -> None:
    files = compiled.usable_build(_fake_build(tmp_path))
    assert files is not None
    assert files["orchestrator.logparse.rules"] == tmp_path / "orchestrator/logparse/rules.so"


@pytest.mark.parametrize("change", [{"digest": "0" * 64}, {"interpreter": "cpython-39-linux"}, {"files": {}}])
def test_a_stale_or_foreign_build_is_never_used(tmp_path: Path, change: dict[str, object]) -> None:
    assert compiled.usable_build(_fake_build(tmp_path, **change)) is None


def test_a_build_missing_a_module_file_is_not_used(tmp_path: Path) -> None:
    root = _fake_build(tmp_path)
    (root / "orchestrator/logparse/rules.so").unlink()
    assert compiled.usable_build(root) is None
    assert compiled.usable_build(tmp_path / "nowhere") is None


def _modules_in_child(env_value: str) -> dict[str, object]:
    code = ("import json, orchestrator.logparse as p, orchestrator.logparse.rules as r; "
            "print(json.dumps({'in_use': p.compiled.in_use(), 'rules': r.__file__}))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, compiled.ENV: env_value}, cwd=REPO,
                         capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def test_the_switch_forces_the_python_modules() -> None:
    child = _modules_in_child("0")
    assert child == {"in_use": False, "rules": str(REPO / "orchestrator/logparse/rules.py")}


def test_an_installed_build_of_these_sources_is_what_runs() -> None:
    """Where ``make parser`` built the parser (CI checks it did), its modules are the ones imported."""
    built = compiled.usable_build(compiled.native_dir()) is not None
    child = _modules_in_child("1")
    assert child["in_use"] is built
    assert str(child["rules"]).endswith(".so" if built else "rules.py")


def _logs() -> list[Path]:
    return sorted([*(DATA / "logs").glob("*.log"), *(DATA / "real").glob("*.log"), *DATA.glob("wild*/*.*")])


_PURE = """
import json, sys
from orchestrator.logparse import analyze_bytes
from tests.unit.logparse.conftest import parse_all
out = []
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    events, parser = parse_all(data, [4096] * min(len(data) // 4096, 50))
    out.append([analyze_bytes(data).to_json(file="x"), [e.to_dict() for e in events], parser.snapshot()])
print(json.dumps(out))
"""


@pytest.mark.skipif(not compiled.in_use(), reason="no compiled parser here (make parser builds it; CI checks)")
def test_compiled_and_python_modules_give_the_same_verdicts_events_and_snapshots() -> None:
    paths = [p for p in _logs() if p.suffix not in (".json", ".md", ".py")]
    assert len(paths) > 30
    pure = subprocess.run([sys.executable, "-c", _PURE, *map(str, paths)], cwd=REPO, capture_output=True,
                          text=True, check=True, env={**os.environ, compiled.ENV: "0"})
    want = json.loads(pure.stdout)
    for path, (analysis, events, snapshot) in zip(paths, want, strict=True):
        data = path.read_bytes()
        got_events, parser = parse_all(data, [4096] * min(len(data) // 4096, 50))
        assert analyze_bytes(data).to_json(file="x") == analysis, path.name
        assert [e.to_dict() for e in got_events] == events, path.name
        assert json.loads(json.dumps(parser.snapshot())) == snapshot, path.name
