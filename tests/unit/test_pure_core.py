"""The pure core imports no I/O library at module level."""

from __future__ import annotations

import json
import subprocess
import sys

PURE = ["orchestrator.logparse", "orchestrator.core.runstate", "orchestrator.core.commands", "orchestrator.alerts.rules",
        "orchestrator.preflight", "orchestrator.core.freshness", "orchestrator.monitoring.decide",
        "orchestrator.monitoring.liveness", "orchestrator.monitoring.truncation"]
FORBIDDEN = ["asyncssh", "sqlalchemy", "textual", "alembic"]


def test_pure_modules_import_no_io_library() -> None:
    """Importing each pure module in a fresh interpreter pulls in none of asyncssh/sqlalchemy/textual."""
    code = (
        "import importlib, json, sys\n"
        f"for m in {PURE!r}:\n"
        "    try: importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name != m: raise\n"
        f"print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_the_check_would_catch_a_violation() -> None:
    """Sanity: an I/O module (the SSH transport) does pull asyncssh in, so the test above can fail."""
    code = "import sys, orchestrator.remote.ssh; print('asyncssh' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
