"""Small text helpers for the screens: ages, ETAs, progress bars, status colours, search matches, Slurm."""

from __future__ import annotations

import re
from datetime import datetime

from rich.text import Text

from orchestrator.core.freshness import eta_left
from orchestrator.core.humanize import STATUS_STYLE, coarse, short_span, span
from orchestrator.services.runview import RunView

BAR_FULL, BAR_EMPTY = "█", "░"


def age(created: datetime, now: datetime, *, narrow: bool = False) -> str:
    seconds = (now - created).total_seconds()
    return coarse(seconds) if narrow else span(seconds)


def stamp(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "—"


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def bar(done: int, total: int, width: int = 8) -> str:
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return BAR_FULL * filled + BAR_EMPTY * (width - filled)


def progress_of(row: RunView, now: datetime | None = None) -> tuple[int, int, float | None, float | None, str] | None:
    """(done, total, rate/s, eta s, unit) for shards when loading, else user progress; None if unknown.

    With ``now``, the log's shard ETA is counted down from the run's last output: negative once overdue."""
    if row.shards_total and (row.phase == "loading" or not row.progress_total):
        eta = row.shards_eta_s if now is None else eta_left(row.shards_eta_s, row.last_output_at, now)
        return row.shards_done or 0, row.shards_total, row.shards_rate, eta, "shards"
    if row.progress_total:
        done, rate = row.progress_done or 0, row.progress_rate
        eta = (row.progress_total - done) / rate if rate else None
        return done, row.progress_total, rate, eta, "items"
    return None


def progress_cell(row: RunView, width: int = 8, now: datetime | None = None) -> str:
    """`████░░░░ 12/35 5m10s` — ETA only while the run is active (counted down from the last output with
    ``now``), `overdue` once it has passed; `width` 0: `12/35 5m` for narrow tables."""
    progress = progress_of(row, now)
    if progress is None:
        return ""
    done, total, _rate, eta, _unit = progress
    text = f"{bar(done, total, width)} {done}/{total}" if width else f"{done}/{total}"
    if eta is not None and not row.terminal and done < total:
        if eta < 0:
            text += " overdue"
        else:
            text += f" {short_span(eta) if width else coarse(eta)}"
    return text


def rate_text(rate: float | None, unit: str) -> str:
    if not rate:
        return ""
    if rate >= 1:
        return f"{rate:.2f} {unit}/s"
    return f"{60 * rate:.2f} {unit}/min"


def match_spans(line: str, needle: str) -> list[tuple[int, int]]:
    """Where needle occurs in line, case-insensitively: (start, end) offsets; none for an empty needle."""
    if not needle:
        return []
    return [m.span() for m in re.finditer(re.escape(needle), line, re.IGNORECASE)]


# squeue's compact state codes (`%t`), for the runs table.
SLURM_CODES = {
    "PENDING": "PD", "CONFIGURING": "CF", "RUNNING": "R", "COMPLETING": "CG", "COMPLETED": "CD",
    "CANCELLED": "CA", "FAILED": "F", "TIMEOUT": "TO", "NODE_FAIL": "NF", "PREEMPTED": "PR", "SUSPENDED": "S",
    "OUT_OF_MEMORY": "OOM", "BOOT_FAIL": "BF", "DEADLINE": "DL", "REQUEUED": "RQ", "REQUEUE_HOLD": "RH",
    "RESIZING": "RS", "STOPPED": "ST",
}
SLURM_STYLE = {
    "PENDING": "yellow", "CONFIGURING": "yellow", "REQUEUED": "yellow", "RUNNING": "cyan", "COMPLETING": "cyan",
    "COMPLETED": "green", "CANCELLED": "yellow", "FAILED": "red", "TIMEOUT": "red", "NODE_FAIL": "red",
    "OUT_OF_MEMORY": "red", "BOOT_FAIL": "red", "UNKNOWN": "magenta", "GONE": "magenta",
}


def slurm_text(row: RunView) -> Text | None:
    """`Slurm job 1234 · PENDING (Resources)` / `Slurm job 1234 · RUNNING on node1`; None for other runs."""
    if not row.slurm_job:
        return None
    text = Text(f"Slurm job {row.slurm_job} · ")
    text.append(row.slurm_state or "submitted", style=SLURM_STYLE.get(row.slurm_state, "dim"))
    if row.slurm_reason:
        text.append(f" ({row.slurm_reason})")
    if row.slurm_node:
        text.append(f" on {row.slurm_node}")
    return text


def slurm_cell(row: RunView) -> str:
    """`1234 PD Resources` / `1234 R node1`: job, squeue's state code, why it waits or where it runs."""
    if not row.slurm_job:
        return ""
    parts = [row.slurm_job]
    if row.slurm_state:
        parts.append(SLURM_CODES.get(row.slurm_state, row.slurm_state))
    if row.slurm_reason or row.slurm_node:
        parts.append(row.slurm_reason or row.slurm_node)
    return " ".join(parts)
