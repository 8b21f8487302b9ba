"""Where eorch keeps its state ($EORCH_HOME) and what config.toml may say.

``$EORCH_HOME`` defaults to the XDG data dir (``~/.local/share/eorch``); it holds ``eorch.db``,
``config.toml``, ``known_hosts`` (keys pinned with ``--accept-new-host-key``) and the monitor lock.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ConfigError
from orchestrator.paths import DB_NAME, default_home


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SshSection(_Section):
    config: list[str] = Field(default_factory=list, description="ssh_config files to read instead of ~/.ssh/config")
    connect_timeout_s: float = 15.0


class MonitorSection(_Section):
    poll_interval_s: float = Field(1.0, gt=0, description="liveness checks per host")
    stall_minutes: float = Field(15.0, gt=0)
    unreachable_minutes: float = Field(5.0, gt=0)
    cancel_grace_s: float = Field(10.0, ge=0)
    # Reading commands (runs, show, the TUI without a monitor) check liveness for at most this long per host.
    refresh_timeout_s: float = Field(5.0, gt=0)
    # `eorch launch` starts a background monitor when none is following runs.
    auto_start: bool = True


class LocalSection(_Section):
    root: str | None = None  # remote-side state dir of the built-in `local` host


class ConfigFile(_Section):
    ssh: SshSection = Field(default_factory=SshSection)
    monitor: MonitorSection = Field(default_factory=MonitorSection)
    local: LocalSection = Field(default_factory=LocalSection)
    alerts: dict[str, Any] = Field(default_factory=dict)  # validated by orchestrator.alerts


@dataclass(frozen=True)
class Settings:
    home: Path
    config: ConfigFile

    @property
    def db_path(self) -> Path:
        return self.home / DB_NAME

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"

    @property
    def pinned_known_hosts(self) -> Path:
        return self.home / "known_hosts"

    @property
    def monitor_lock(self) -> Path:
        return self.home / "monitor.lock"

    @property
    def local_root(self) -> str:
        return self.config.local.root or str(self.home / "local-host")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    home = default_home(env)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot create EORCH_HOME {home}: {err.strerror}") from err
    path = home / "config.toml"
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:
            raise ConfigError(f"{path}: not UTF-8 text (byte {err.start}); save it as UTF-8") from None
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise ConfigError(f"{path}: {err}") from err
    try:
        config = ConfigFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from err
    return Settings(home=home, config=config)
