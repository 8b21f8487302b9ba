"""What every command needs: settings, the history, and one live session per host."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from orchestrator.config import Settings, load_settings
from orchestrator.remote.hosts import LOCAL_HOST, HostSession, make_transport
from orchestrator.remote.transport import Transport
from orchestrator.store.db import Session, open_store, sessionmaker, transaction
from orchestrator.store.models import Host
from orchestrator.store.queries import add_host_if_missing, get_host, utcnow


@dataclass
class Context:
    settings: Settings
    sessionmaker: sessionmaker[Session]
    # How a host is reached: SSH, or local subprocesses for `local`; a test passes a scripted transport.
    transport_for: Callable[[Host, Settings], Transport] = make_transport
    _sessions: dict[str, HostSession] = field(default_factory=dict)
    _opening: dict[str, asyncio.Lock] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Context:
        settings = load_settings()
        ctx = cls(settings, open_store(settings.db_path))
        ctx.ensure_local_host()
        return ctx

    @contextmanager
    def db(self) -> Iterator[Session]:
        """A session whose changes commit together on success and roll back on any error (store.db)."""
        with transaction(self.sessionmaker, self.settings.db_path) as session:
            yield session

    def ensure_local_host(self) -> None:
        with self.db() as s:
            add_host_if_missing(s, name=LOCAL_HOST, destination="localhost", port=None,
                                root=self.settings.local_root, python="python3", created_at=utcnow())

    def host_row(self, name: str) -> Host:
        with self.db() as s:
            return get_host(s, name)

    async def session(self, host_name: str) -> HostSession:
        """The open session to a host, connecting (and uploading the worker) on first use."""
        lock = self._opening.setdefault(host_name, asyncio.Lock())
        async with lock:
            current = self._sessions.get(host_name)
            if current is not None and current.is_open():
                return current
            if current is not None:
                await current.close()
            row = self.host_row(host_name)
            session = HostSession.for_host(row, self.settings, self.transport_for(row, self.settings))
            try:
                await session.open()
            except BaseException:
                await session.close()
                raise
            self._sessions[host_name] = session
            return session

    async def drop_session(self, host_name: str) -> None:
        session = self._sessions.pop(host_name, None)
        if session is not None:
            await session.close()

    async def close(self) -> None:
        for name in list(self._sessions):
            await self.drop_session(name)
