"""Where eorch keeps its state: ``$EORCH_HOME``, or the XDG data dir (``~/.local/share/eorch``).

Standard library only (platformdirs aside): `eorch runs` finds the history here without loading the settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

DB_NAME = "eorch.db"


def default_home(env: Mapping[str, str]) -> Path:
    if env.get("EORCH_HOME"):
        return Path(env["EORCH_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("eorch", appauthor=False))


def cache_dir(env: Mapping[str, str]) -> Path:
    """What eorch can rebuild at will (compiled search sets): ``$EORCH_HOME/cache``, or the XDG cache dir."""
    if env.get("EORCH_HOME"):
        return Path(env["EORCH_HOME"]).expanduser() / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("eorch", appauthor=False))
