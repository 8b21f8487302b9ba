"""The alert outbox: every delivery of an alert to a channel is a row, written before anything is sent.

An alert and one ``pending`` delivery row per channel that takes its kind are inserted in one transaction
(the alert's unique ``dedup_key`` still keeps a rule from raising it twice). The channel worker marks the row
after each attempt: ``sent`` once the channel accepted it, ``failed`` when the retries are used up (with the
last error). A monitor killed in between leaves the row ``pending``; the next monitor to start re-sends the
pending rows not older than the re-send window (``[alerts] resend_window_minutes``, default 60) and marks the
older ones ``expired``. So delivery is at least once until a channel accepts it, and a delivery marked
``sent`` is never sent again (a kill in the instant between the channel's answer and the mark is the one
window for a duplicate).

No URL is stored: a row names its channel by the redacted form and ``channel_key``, a hash of the URL, which
tells channels apart (two URLs may redact alike) and finds the configured channel again after a restart.

This module is the outbox's vocabulary (states, targets, how a delivery reads); its rows are
`orchestrator.store.outbox`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.alerts.rules import AlertToRaise

PENDING, SENT, FAILED, EXPIRED = "pending", "sent", "failed", "expired"
STATES = (PENDING, SENT, FAILED, EXPIRED)
ERROR_MAX = 500


def url_key(url: str) -> str:
    """A stable name for a configured URL that does not reveal it."""
    return "url:" + hashlib.sha256(url.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Target:
    """A channel an alert is to be delivered to: its key and its printable (redacted) name."""

    key: str
    name: str


@dataclass(frozen=True)
class PendingDelivery:
    delivery_id: int
    channel_key: str
    alert: AlertToRaise


def overall_state(deliveries: Sequence[dict[str, Any]]) -> str:
    """One word for an alert: the worst state among its deliveries ("none" without channels)."""
    states = {d["state"] for d in deliveries}
    for state in (FAILED, EXPIRED, PENDING, SENT):
        if state in states:
            return state
    return "none"


def describe(d: dict[str, Any]) -> str:
    """`json://127.0.0.1 sent`, `notify-send FAILED after 4 attempts: …` — never a URL (the names are redacted)."""
    state = d["state"]
    if state == SENT:
        return f"{d['channel']} sent" + (f" (attempt {d['attempts']})" if d["attempts"] > 1 else "")
    if state == PENDING:
        return f"{d['channel']} pending" + (f" ({d['attempts']} attempts so far)" if d["attempts"] else "")
    if state == FAILED:
        return f"{d['channel']} FAILED after {d['attempts']} attempts: {d['error'] or 'unknown error'}"
    return f"{d['channel']} {state.upper()} (not sent)"
