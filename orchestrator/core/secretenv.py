"""Which of a job's environment variables are secrets, and their values replaced for the history.

A value is a secret when its key looks like one (``*TOKEN*``, ``*KEY*``, ``*SECRET*``, ``*PASSWORD*``, …) or
the user named it with ``--secret-env``. The job still gets it (the worker hands it over in a 0600 file the
wrapper reads and deletes); the history, the remote ``meta.json``, ``show --json`` and ``export`` only ever see
``REDACTED``. Pure: values in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
_SECRET_KEY = re.compile(r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


def is_secret_key(key: str, explicit: Iterable[str] = ()) -> bool:
    return key in set(explicit) or _SECRET_KEY.search(key) is not None


def split_env(env: Mapping[str, str], explicit: Iterable[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """(the variables that may be recorded, the secret ones)."""
    explicit = set(explicit)
    public = {k: v for k, v in env.items() if not is_secret_key(k, explicit)}
    return public, {k: v for k, v in env.items() if k not in public}


def redacted_env(env: Mapping[str, Any] | None, explicit: Iterable[str] = ()) -> dict[str, Any]:
    """``env`` with every secret value replaced by ``REDACTED`` (the keys stay: the run had them)."""
    explicit = set(explicit)
    return {k: REDACTED if is_secret_key(k, explicit) else v for k, v in (env or {}).items()}
