"""The run history's pure part: filters, failure fingerprints, what changed between two runs, search terms.

No I/O here: the queries are `orchestrator.store.history`, and the CLI and the TUI read the history through
`orchestrator.services.history`.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.core.clock import utcnow
from orchestrator.core.secretenv import REDACTED, is_secret_key
from orchestrator.errors import UsageError

# --------------------------------------------------------------------------------------------- filters

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """`7d`, `12h`, `30m`, `2w`, or an ISO date/time (UTC) → the earliest creation time to keep."""
    now = now or utcnow()
    match = _SINCE.match(value)
    if match:
        try:
            return now - timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2).lower()])
        except (OverflowError, ValueError):
            raise UsageError(f"{value!r} is further back than any date; use at most a few thousand years "
                             "(e.g. 365d) or an ISO date") from None
    try:
        parsed = datetime.fromisoformat(value.strip().removesuffix("Z"))
    except ValueError as err:
        raise UsageError(f"cannot read {value!r} as a time: use 7d, 12h, 30m, 2w or an ISO date") from err
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


@dataclass(frozen=True)
class RunFilter:
    status: str | None = None
    host: str | None = None
    since: datetime | None = None
    name: str | None = None  # a glob: eagle3-*
    signature: str | None = None
    exception: str | None = None  # exact, or the last dotted part: OutOfMemoryError
    model: str | None = None  # exact path, or a glob
    vllm: str | None = None  # vllm version the run ran (env fingerprint)
    speculators: str | None = None
    patch_set: str | None = None  # name of the patch set the run was launched with


# --------------------------------------------------------------------------------------------- fingerprint

_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE), "<uuid>"),
    (re.compile(r"0x[0-9a-f]+", re.IGNORECASE), "<hex>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[~.]?/[\w.@+-]+)+/?"), "<path>"),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.IGNORECASE), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
]
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in (\S+)', re.MULTILINE)
INNERMOST_FRAMES = 3


def normalise_message(message: str) -> str:
    """The message with paths, ids, hex addresses and numbers masked, so reruns of one bug compare equal."""
    for pattern, mask in _MASKS:
        message = pattern.sub(mask, message)
    return message.strip()


def failure_signature_text(root_cause: Mapping[str, Any]) -> str | None:
    """The normalised root cause: exception type | masked message | innermost frames' function names."""
    exception = root_cause.get("exception") or ""
    message = root_cause.get("message") or ""
    frames = _FRAME.findall(root_cause.get("traceback") or "")[-INNERMOST_FRAMES:]
    if not (exception or message or frames):
        return None
    return f"{exception}|{normalise_message(str(message))}|{'>'.join(frames)}"


def fingerprint_of(root_cause: Mapping[str, Any] | None) -> str | None:
    if not root_cause:
        return None
    normalised = failure_signature_text(root_cause)
    return hashlib.sha256(normalised.encode()).hexdigest()[:32] if normalised else None


def record_fingerprint(run: Any) -> str | None:
    """Store the run's failure fingerprint on the row (idempotent); None when it has no root cause."""
    print_ = fingerprint_of(run.root_cause)
    if print_ and run.fingerprint != print_:
        run.fingerprint = print_
    return print_


# ------------------------------------------------------------------------------------------------ similar

def _env_value(key: str, value: Any) -> Any:
    return REDACTED if is_secret_key(key) else value


def dict_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 redact: bool = False) -> dict[str, Any]:
    before, after = before or {}, after or {}
    show = _env_value if redact else (lambda _k, v: v)
    out: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out[key] = {"from": show(key, before.get(key)), "to": show(key, after.get(key))}
    return out


def run_changes(earlier: Any, later: Any) -> dict[str, Any]:
    """What differs between two runs: command, env vars (secrets redacted), patches, versions, code."""
    changes: dict[str, Any] = {}
    if earlier.command != later.command:
        changes["command"] = {"from": earlier.command, "to": later.command}
    for name in ("model", "vllm_version", "speculators_version", "host"):
        if getattr(earlier, name) != getattr(later, name):
            changes[name] = {"from": getattr(earlier, name), "to": getattr(later, name)}
    for name, redact in (("env", True), ("patch_set", False), ("env_fingerprint", False)):
        diff = dict_changes(getattr(earlier, name), getattr(later, name), redact=redact)
        if diff:
            changes[name] = diff
    return changes


def describe_changes(changes: Mapping[str, Any]) -> str:
    """`vllm_version: 0.16.0 → 0.17.1; env: VLLM_USE_V1 1→0` — what `run_changes` found, in one line."""
    return "; ".join(_describe_change(k, v) for k, v in changes.items()) or "nothing recorded"


def _describe_change(key: str, change: Any) -> str:
    if isinstance(change, dict) and set(change) == {"from", "to"}:
        before, after = change["from"], change["to"]
        if isinstance(before, list) or isinstance(after, list):
            return f"{key}: {shlex.join(map(str, before or []))} → {shlex.join(map(str, after or []))}"
        return f"{key}: {before} → {after}"
    return f"{key}: " + ", ".join(f"{k} {v['from']}→{v['to']}" for k, v in change.items())


# ------------------------------------------------------------------------------------------------- search


def fts_query(words: str) -> str:
    """User text as an FTS5 query: each word a quoted term (so `-`, `:` and `.` are data), all required."""
    terms = [w.replace('"', '""') for w in words.split() if w.strip()]
    if not terms:
        raise UsageError("give some words to search for")
    return " ".join(f'"{t}"' for t in terms)


# Marks around the matched words in an FTS snippet: characters no root cause text contains (it is made
# inert), so they tell a match from a bracket in the text.
MATCH_OPEN, MATCH_CLOSE = "\x02", "\x03"


def unmark(snippet: str) -> tuple[str, list[list[int]]]:
    """The snippet without its match marks, and the [start, end) of each match in it."""
    plain: list[str] = []
    spans: list[list[int]] = []
    pos = 0
    for i, part in enumerate(snippet.replace(MATCH_CLOSE, MATCH_OPEN).split(MATCH_OPEN)):
        if i % 2:
            spans.append([pos, pos + len(part)])
        plain.append(part)
        pos += len(part)
    return "".join(plain), spans
