"""A kept server (``keep_server``) as the history records it, and the retry request (the edge's part).

Pure part: ``apply_warm_event`` folds the recipe's ``server_kept`` / ``retry`` / ``stop`` step events into
``runs.warm_server``: ``{"state": waiting|retrying|stopped, "step", "error", "idle_timeout_s", "load_s",
"retries", "saved_load_s", "since"}`` — a run's attempts share its one loaded server; ``saved_load_s`` is the
server's load time once per retry (what a relaunch would have paid again).
"""

from __future__ import annotations

from typing import Any

from orchestrator.context import Context
from orchestrator.core import commands
from orchestrator.errors import UsageError
from orchestrator.store.models import Run
from orchestrator.store.queries import get_run


def apply_warm_event(current: dict[str, Any] | None, record: dict[str, Any]) -> dict[str, Any] | None:
    kind = record.get("kind")
    warm = dict(current or {"retries": 0, "saved_load_s": 0.0})
    if kind == "server_kept":
        warm.update(state="waiting", step=record.get("step"), error=record.get("error"),
                    idle_timeout_s=record.get("idle_timeout_s"), load_s=record.get("load_s"), since=record.get("ts"))
        return warm
    if kind == "retry" and current is not None:
        warm.update(state="retrying", retries=int(record.get("attempt") or 0),
                    saved_load_s=round(float(warm.get("saved_load_s") or 0) + float(record.get("saved_load_s") or 0), 3))
        return warm
    if kind == "step" and record.get("step") == "stop" and record.get("state") in ("done", "failed") and current:
        warm["state"] = "stopped"
        return warm
    return current


async def request_retry(ctx: Context, ref: str) -> Run:
    """Asks a run whose client failed on a kept server to run the client again (UsageError if it is not
    waiting for one)."""
    with ctx.db() as s:
        run = get_run(s, ref)
    warm = run.warm_server or {}
    if run.kind != "eagle3-extract" or run.status != "running" or warm.get("state") != "waiting":
        why = (f"it is {run.status}" if run.status != "running" else
               "its server is not kept for a retry" if not warm else f"its kept server is {warm.get('state')}")
        raise UsageError(f"run {run.id} is not waiting for a retry ({why}); `eorch retry` needs a run launched "
                         "with --keep-server whose client failed while its server stayed up")
    session = await ctx.session(run.host)
    done = await session.transport.run(commands.request_retry(run.remote_dir or ""))
    if done.exit_status != 0:
        raise UsageError(f"run {run.id}: cannot ask the host for a retry: {done.stderr.decode(errors='replace')[:300]}")
    return run
