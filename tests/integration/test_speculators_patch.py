"""The shipped `speculators-lock-wait` patch set against the real speculators 0.9.0 package (a private copy).

Applied through the real CLI and sshd; the patched client must still honour the writer's lock exactly: it
returns only once the writer lets go, removes the lock file, and gives up with TimeoutError.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from enginecopy import engine_venv, make_overlay, site_packages
from helpers import eorch

SET = "speculators-lock-wait"
FILE = "speculators/data_generation/vllm_client.py"

PROBE = textwrap.dedent('''
    import asyncio, fcntl, json, os, subprocess, sys, time
    from speculators.data_generation import vllm_client as vc
    lock = sys.argv[1]
    open(lock, "w").close()
    holder = subprocess.Popen([sys.executable, "-c",
        "import fcntl, sys, time; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); "
        "time.sleep(float(sys.argv[2]))", lock, sys.argv[2]], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    try:
        asyncio.run(vc.wait_for_lock_async(lock, timeout=float(sys.argv[3])))
        outcome = "acquired"
    except TimeoutError:
        outcome = "timeout"
    waited = time.monotonic() - t0
    holder.wait()
    print(json.dumps({"outcome": outcome, "waited": waited, "lock_left": os.path.exists(lock),
                      "patched": "eorch patch speculators-lock-wait" in open(vc.__file__).read()}))
''')


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("spec-overlay") / "venv"
    python = make_overlay(engine_venv(), dest, packages=("speculators", "speculators-*.dist-info"))
    return {"python": python, "site": site_packages(dest)}


def probe(python: Path, tmp_path: Path, hold_s: float, timeout_s: float) -> dict[str, object]:
    out = subprocess.run([str(python), "-c", PROBE, str(tmp_path / "hs_0.safetensors.lock"), str(hold_s),
                          str(timeout_s)], capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_patched_client_still_waits_for_the_writer(eorch_home: Path, tmp_path: Path,
                                                   overlay: dict[str, Path]) -> None:
    eorch("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
    report = json.loads(eorch("patch", "apply", "--host", "gpu", "--python", str(overlay["python"]), SET,
                              "--json").stdout)
    assert report["changed"] is True and report["state"] == "applied" and report["version"] == "0.9.0"
    assert report["files"][0]["abs_path"] == str(overlay["site"] / FILE)

    held = probe(overlay["python"], tmp_path, hold_s=0.3, timeout_s=10)
    assert held["patched"] is True
    assert held["outcome"] == "acquired" and held["lock_left"] is False
    assert float(held["waited"]) >= 0.25  # it did not take the lock while the writer held it  # type: ignore[arg-type]

    stuck = probe(overlay["python"], tmp_path, hold_s=3, timeout_s=0.5)
    assert stuck["outcome"] == "timeout"

    back = json.loads(eorch("patch", "revert", "--host", "gpu", "--python", str(overlay["python"]), SET,
                            "--json").stdout)
    assert back["state"] == "not-applied"
    assert probe(overlay["python"], tmp_path, hold_s=0.1, timeout_s=10)["patched"] is False
