"""Stopping an EAGLE-3 recipe run's processes: EOF to the warm python, TERM → grace → KILL to each process group,
then anything still carrying the run's marker, then the GPU memory release checked with nvidia-smi."""

from __future__ import annotations

import subprocess
from typing import Any

from worker.recipes.proc import kill_marked, pids_with_marker, wait_gpu_release


def stop(recipe: Any) -> dict[str, Any]:
    """Stops ``recipe``'s (an ``eagle3.Eagle3Recipe``) children; returns what happened (the stop step's detail)."""
    t0 = recipe._begin("stop")
    tracked = set(pids_with_marker(recipe.marker))
    grace = float(recipe.cfg.get("stop_grace_s", 30))
    children = []
    if recipe.py is not None:
        recipe.py.close()  # EOF: an idle warm python exits at once; a busy one is stopped below
        try:
            recipe.py.child.wait(timeout=0 if recipe.py.busy else 2.0)
        except subprocess.TimeoutExpired:
            children.append(recipe.py.child)
    if recipe.server is not None:
        children.append(recipe.server)
    stopped = [c.stop(min(grace, 5.0) if recipe._server_dead and c is recipe.server else grace) for c in children]
    killed = kill_marked(recipe.marker, grace_s=2.0)
    remaining = pids_with_marker(recipe.marker)
    gpu_held, waited = wait_gpu_release(tracked, float(recipe.cfg.get("gpu_release_timeout_s", 30)))
    detail = {"stopped": stopped, "leftover_killed": killed, "remaining": remaining,
              "gpu_released": None if gpu_held is None else not gpu_held, "gpu_release_wait_s": waited}
    if remaining or gpu_held:
        recipe.events.step("stop", "failed", **detail)
        recipe.say(f"step stop: FAILED, processes remain {remaining} / GPU held by {gpu_held}")
    else:
        recipe._end("stop", t0, **detail)
    return detail
