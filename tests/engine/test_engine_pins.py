"""The GPU engine pins that `eorch host setup` installs resolve together on PyPI (slow; needs the package index).

The GPU venvs cannot be built here (no CUDA host with vLLM), so this checks what can be: every pinned
distribution exists for this platform and Python, and pip finds one consistent set for each file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ENGINE = Path(__file__).resolve().parents[2] / "deploy" / "engine"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.mark.parametrize("name", ["vllm-0.33.0.txt", "speculators-0.9.0.txt"])
def test_gpu_pins_resolve(name: str, tmp_path: Path) -> None:
    req = ENGINE / name
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--disable-pip-version-check", "--report", str(report), "-r", str(req)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    resolved = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                for i in json.loads(report.read_text())["install"]}
    for dist, version in _pins(req).items():
        assert resolved.get(dist) == version, f"{name}: {dist} resolved to {resolved.get(dist)}, pinned {version}"
