"""Retry without reloading: with ``keep_server`` a failure on the client side (the first-sample gate, the
speculators client, verification) leaves the loaded ``vllm serve`` up, and the run waits for a retry.

``eorch retry RUN`` creates ``RUN_DIR/retry``; the recipe (polling every 0.1 s) runs the client steps again
against the warm server — generate-offline-data skips every ``hs_*.safetensors`` already written, so only the
missing samples are extracted.  ``eorch cancel`` stops it as any run (TERM → the stop step, GPU release
checked); ``keep_server_idle_s`` without a retry stops the server and fails the run with the client's error.
Events: ``{"kind": "server_kept", "step", "error", "idle_timeout_s", "load_s"}`` when it starts waiting,
``{"kind": "retry", "attempt", "waited_s", "saved_load_s"}`` when a retry starts.
"""

from __future__ import annotations

import time
from typing import Any

from worker.recipes.errors import StepFailed

CLIENT_STEPS = ("gate", "extract", "verify")
RETRY_FILE = "retry"
POLL_S = 0.1


def client_steps(recipe: Any) -> None:
    """gate → extract → verify of ``recipe`` (an ``eagle3.Eagle3Recipe`` with its server healthy)."""
    attempt = 0
    while True:
        try:
            recipe.gate()
            recipe.extract()
            recipe.verify()
            return
        except StepFailed as exc:
            if not _keep(recipe, exc):
                raise
            recipe.events.step(exc.step, "failed", error=str(exc), server_kept=True, **exc.detail)
            waited = wait_for_retry(recipe, exc)
        attempt += 1
        saved = float(recipe.timings.get("serve") or 0.0)
        recipe.events.emit("retry", attempt=attempt, waited_s=round(waited, 3), saved_load_s=saved)
        recipe.say(f"retry {attempt}: the client again on the warm server (saved a {saved:.1f}s load)")
        _reset_client(recipe)


def _keep(recipe: Any, exc: StepFailed) -> bool:
    server = recipe.server
    return bool(recipe.cfg.get("keep_server")) and exc.step in CLIENT_STEPS and not recipe._server_dead \
        and server is not None and server.poll() is None


def wait_for_retry(recipe: Any, exc: StepFailed) -> float:
    """Blocks until ``eorch retry`` asks (returns the seconds waited); StepFailed on idle timeout or a dead
    server (the client's failure stays the run's error)."""
    idle = float(recipe.cfg.get("keep_server_idle_s") or 1800.0)
    flag = recipe.run_dir / RETRY_FILE
    flag.unlink(missing_ok=True)
    recipe.events.emit("server_kept", step=exc.step, error=str(exc), idle_timeout_s=idle,
                       load_s=recipe.timings.get("serve"), port=recipe.cfg.get("port"))
    recipe.say(f"client failed at {exc.step}: {exc}")
    recipe.say(f"the server stays up: `eorch retry` runs the client again (only missing samples), `eorch cancel` "
               f"stops it; idle timeout {idle:.0f}s")
    t0 = time.monotonic()
    while True:
        if flag.exists():
            flag.unlink(missing_ok=True)
            return time.monotonic() - t0
        if recipe.server.poll() is not None:
            recipe._server_dead = True
            raise StepFailed(exc.step, f"{exc} (then the kept server died: "
                             f"{recipe._server_failure('vLLM server died')})")
        if time.monotonic() - t0 > idle:
            raise StepFailed(exc.step, f"{exc}; no retry within the idle timeout ({idle:.0f}s): server stopped")
        time.sleep(POLL_S)


def _reset_client(recipe: Any) -> None:
    """A fresh attempt: the last one's findings dropped; a warm python that died (``os._exit``) restarted."""
    recipe.client_errors.clear()
    recipe.verify_result = None
    if recipe.py is not None and (recipe.py.child.poll() is not None or recipe.py.busy):
        recipe.py.close()
        recipe.py = recipe.new_warm_python()
