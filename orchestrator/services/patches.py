"""Patch actions and the "what works with what" matrix, as `eorch patch actions` and `eorch matrix` show them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select

from orchestrator.context import Context
from orchestrator.core.humanize import iso
from orchestrator.store.models import PatchAction, Run


def actions(ctx: Context, host: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The recorded patch actions, newest first, as `--json` prints them."""
    stmt = select(PatchAction).order_by(PatchAction.id.desc()).limit(limit)
    if host:
        stmt = stmt.where(PatchAction.host == host)
    with ctx.db() as s:
        return [{"id": a.id, "at": iso(a.created_at), "host": a.host, "python": a.python, "set": a.patch_set,
                 "action": a.action, "ok": a.ok, "details": a.details} for a in s.scalars(stmt)]


def matrix(ctx: Context) -> list[dict[str, Any]]:
    """Outcomes by (vllm, speculators, patch set): the "what works with what" table."""
    counts: dict[tuple[str, str, str], Counter[str]] = {}
    with ctx.db() as s:
        for vllm, speculators, patch_set, status in s.execute(
                select(Run.vllm_version, Run.speculators_version, Run.patch_set, Run.status)):
            key = (vllm or "—", speculators or "—", (patch_set or {}).get("name") or "—")
            counts.setdefault(key, Counter())[status] += 1
    return [{"vllm": k[0], "speculators": k[1], "patch_set": k[2], "runs": sum(c.values()), **dict(c)}
            for k, c in sorted(counts.items())]
