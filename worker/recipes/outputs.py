"""Small filesystem and HTTP facts the EAGLE-3 recipe reads: output counts, bytes, manifest, staging, health."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def _indices(out: Path) -> dict[int, str]:
    found = {}
    try:
        names = os.listdir(out)
    except OSError:
        return {}
    for n in names:
        if n.startswith("hs_") and n.endswith(".safetensors") and n[3:-12].isdigit():
            found[int(n[3:-12])] = n
    return found


def count_hs(out: Path, span: tuple[int, int] | None = None) -> int:
    """``hs_{i}.safetensors`` files in ``out`` (with ``span``: only start <= i < end, this rank's share)."""
    return sum(1 for i in _indices(out) if span is None or span[0] <= i < span[1])


def hs_bytes(out: Path, span: tuple[int, int] | None = None) -> int:
    total = 0
    for i, name in _indices(out).items():
        if span is None or span[0] <= i < span[1]:
            try:
                total += (out / name).stat().st_size
            except OSError:
                pass
    return total


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def stray_locks(staging: Path, client_errors: list[str]) -> list[str]:
    """Locks whose data never arrived (a writer died): named in a client error, or beside an unmoved file."""
    stray = []
    if staging.is_dir():
        for lock in sorted(staging.glob("*.lock")):
            data = lock.with_suffix("")
            if data.exists() or any(data.name in err for err in client_errors):
                stray.append(str(lock))
    return stray


def clean_staging(staging: Path) -> None:
    """Drops the consumed lock files of a verified run, then the run's staging dir (and its parent if empty)."""
    if not staging.is_dir():
        return
    for lock in staging.glob("*.lock"):
        lock.unlink(missing_ok=True)
    for d in (staging, staging.parent):
        try:
            d.rmdir()
        except OSError:
            break


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1 (the server binds it moments later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False
