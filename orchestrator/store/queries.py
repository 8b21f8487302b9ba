"""Reads and writes of the history, each a small function over a Session (no SQL text outside here)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from orchestrator.alerts.rules import AlertToRaise
from orchestrator.core.clock import utcnow as utcnow  # noqa: PLC0414 (re-exported: the writers stamp rows with it)
from orchestrator.core.runstate import ACTIVE_STATUSES, RunStatus, advance
from orchestrator.errors import NotFound, UsageError
from orchestrator.store.models import Alert, Event, Host, PatchAction, Run


def new_run_id() -> str:
    return secrets.token_hex(4)


# ---------------------------------------------------------------------------------------------- hosts


def get_host(session: Session, name: str) -> Host:
    host = session.get(Host, name)
    if host is None:
        raise NotFound(f"unknown host {name!r} (see `eorch host list`, add one with `eorch host add`)")
    return host


def list_hosts(session: Session) -> list[Host]:
    return list(session.scalars(select(Host).order_by(Host.name)))


def hosts_named(session: Session, names: Iterable[str]) -> list[Host]:
    return list(session.scalars(select(Host).where(Host.name.in_(set(names)))))


def host_row(session: Session, name: str) -> Host | None:
    """The host's row, or None when there is no host of that name."""
    return session.get(Host, name)


def add_host_if_missing(session: Session, **columns: Any) -> None:
    """Add the host unless one of its name exists (a command started beside this one may add it first).

    Only a missing host is written: a read-only history still answers the commands that only read it."""
    if session.get(Host, columns["name"]) is None:
        session.execute(insert(Host).values(**columns).on_conflict_do_nothing(index_elements=["name"]))


def set_reachability(session: Session, name: str, reachable: bool, error: str | None = None) -> None:
    host = session.get(Host, name)
    if host is None:
        return
    if reachable:
        host.reachable, host.unreachable_since, host.last_error = True, None, None
    else:
        if host.reachable is not False or host.unreachable_since is None:
            host.unreachable_since = utcnow()
        host.reachable, host.last_error = False, error


# ----------------------------------------------------------------------------------------------- runs


#: Candidates an ambiguous run reference lists.
AMBIGUOUS_SHOWN = 5


def run_row(session: Session, run_id: str) -> Run | None:
    """The run's row by its exact id, to read or change in this transaction; None when it is gone."""
    return session.get(Run, run_id)


def add_run(session: Session, run: Run) -> None:
    session.add(run)


def remove_run(session: Session, run_id: str) -> None:
    """Forget a run and its events (a launch the host refused before starting anything)."""
    session.execute(delete(Event).where(Event.run_id == run_id))
    session.execute(delete(Run).where(Run.id == run_id))


def status_reason(session: Session, run_id: str) -> str | None:
    """The reason its last status change gave, if any (a lost run's)."""
    reasons = [str(e.data["reason"]) for e in events_of(session, run_id, kinds=("status",)) if e.data.get("reason")]
    return reasons[-1] if reasons else None


def get_run(session: Session, ref: str) -> Run:
    """A run by id, unique id prefix, or unique name (the newest run of a name reused is ambiguous)."""
    run = session.get(Run, ref)
    if run is not None:
        return run
    matches = list(session.scalars(select(Run).where(Run.id.startswith(ref, autoescape=True))
                                   .order_by(Run.created_at.desc()).limit(AMBIGUOUS_SHOWN + 1)))
    if not matches:
        matches = list(session.scalars(select(Run).where(Run.name == ref).order_by(Run.created_at.desc())
                                       .limit(AMBIGUOUS_SHOWN + 1)))
    if not matches:
        raise NotFound(f"unknown run {ref!r} (see `eorch runs`)")
    if len(matches) > 1:
        shown = ", ".join(f"{r.id} ({r.name}, {r.status}, {r.created_at:%Y-%m-%d %H:%M})"
                          for r in matches[:AMBIGUOUS_SHOWN])
        more = " and more" if len(matches) > AMBIGUOUS_SHOWN else ""
        raise UsageError(f"run {ref!r} is ambiguous: {shown}{more}; give one of these ids")
    return matches[0]


def any_run(session: Session) -> bool:
    """Whether the history holds any run at all."""
    return session.scalar(select(Run.id).limit(1)) is not None


def active_runs(session: Session, refs: Sequence[str] = ()) -> list[Run]:
    if refs:
        return [r for r in (get_run(session, ref) for ref in refs) if not RunStatus(r.status).is_terminal()]
    stmt = select(Run).where(Run.status.in_([s.value for s in ACTIVE_STATUSES])).order_by(Run.created_at)
    return list(session.scalars(stmt))


def list_runs(session: Session, *, status: str | None = None, host: str | None = None, limit: int = 200) -> list[Run]:
    stmt = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
    if status:
        stmt = stmt.where(Run.status == status)
    if host:
        stmt = stmt.where(Run.host == host)
    return list(session.scalars(stmt))


def runs_with_patch_set(session: Session, host: str) -> list[Run]:
    """The runs on ``host`` launched with a patch set."""
    return list(session.scalars(select(Run).where(Run.host == host, Run.patch_set.is_not(None))))


def add_patch_action(session: Session, **columns: Any) -> None:
    session.add(PatchAction(created_at=utcnow(), **columns))


def insert_alert(session: Session, alert: AlertToRaise, now: datetime) -> int | None:
    """Record the alert; its id, or None when one with its dedup key was recorded before."""
    stmt = insert(Alert).values(
        dedup_key=alert.dedup_key, kind=alert.kind.value, run_id=alert.run_id, host=alert.host,
        created_at=now, title=alert.title[:255], body=alert.body,
    ).on_conflict_do_nothing(index_elements=["dedup_key"]).returning(Alert.id)
    return session.scalar(stmt)


def add_event(session: Session, run_id: str, kind: str, data: dict[str, Any], line_no: int | None = None) -> Event:
    event = Event(run_id=run_id, ts=utcnow(), kind=kind, line_no=line_no, data=data)
    session.add(event)
    return event


def add_events(session: Session, run_id: str, events: Iterable[tuple[str, int | None, dict[str, Any]]]) -> int:
    now = utcnow()
    rows = [Event(run_id=run_id, ts=now, kind=k, line_no=n, data=d) for k, n, d in events]
    session.add_all(rows)
    return len(rows)


def events_of(session: Session, run_id: str, kinds: Sequence[str] = (), limit: int | None = None) -> list[Event]:
    stmt = select(Event).where(Event.run_id == run_id).order_by(Event.id)
    if kinds:
        stmt = stmt.where(Event.kind.in_(kinds))
    if limit:
        stmt = stmt.limit(limit)
    return list(session.scalars(stmt))


def propose_status(session: Session, run: Run, proposed: RunStatus, *, ended_at: datetime | None = None,
                   **data: Any) -> bool:
    """Move the run forward if the state machine allows it; record the change as an event.

    ``ended_at``: when the process ended, if known (the rc file's time on the host), else now: a run found
    ended by a later check must not look as if it ran until then."""
    current = RunStatus(run.status)
    new = advance(current, proposed)
    if new == current:
        return False
    run.status = new.value
    now = utcnow()
    if new == RunStatus.RUNNING and run.started_at is None:
        run.started_at = now
    if new.is_terminal():
        run.ended_at = max(ended_at, run.started_at) if ended_at and run.started_at else ended_at or now
    add_event(session, run.id, "status", {"from": current.value, "to": new.value, **data})
    return True
