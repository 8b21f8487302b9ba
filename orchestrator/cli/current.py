"""What the reading commands add to a run so its status never passes for current when it is not.

``refreshed`` brings the shown runs up to date when no monitor is following them (orchestrator.monitoring.refresh);
``progress_words`` turns a run's view into the words `runs` and `show` print next to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.context import Context
from orchestrator.core.freshness import eta_text, last_output_text
from orchestrator.core.runstate import RunStatus
from orchestrator.errors import HistoryReadOnly
from orchestrator.monitoring.lockfile import monitor_holds
from orchestrator.services import runs

if TYPE_CHECKING:
    from orchestrator.monitoring.refresh import Freshness


def refreshed(ctx: Context, run_ids: Sequence[str], enabled: bool = True) -> bool:
    """Bring the active ones among ``run_ids`` up to date unless asked not to; whether a monitor is running."""
    active = bool(runs.active_ids(ctx, run_ids)) if run_ids else False
    if not enabled or not active:  # nothing to check: the SSH stack is not even imported
        return monitor_holds(ctx.settings.monitor_lock)
    from orchestrator.monitoring.refresh import bring_up_to_date

    async def go() -> Freshness:
        try:
            return await bring_up_to_date(ctx, run_ids)
        finally:
            await ctx.close()

    try:
        return asyncio.run(go()).monitor_running
    except HistoryReadOnly:  # nothing can be recorded: show the history as it is, labelled with its age
        return monitor_holds(ctx.settings.monitor_lock)


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.removesuffix("Z")) if value else None


def progress_words(record: dict[str, Any], now: datetime) -> list[str]:
    """`ETA 4m19s` counted down from the last output (or `overdue 8m`), and `last output 12m ago`, while active."""
    if RunStatus(record["status"]).is_terminal():
        return []
    last = _parse(record.get("last_output_at"))
    words = []
    shards = record.get("shards")
    if shards and shards["done"] < shards["total"]:
        eta = eta_text(record.get("shards_eta_s"), last, now)
        if eta:
            words.append(eta)
    quiet = last_output_text(last, now)
    if quiet:
        words.append(quiet)
    return words
