"""Small filesystem and HTTP facts the EAGLE-3 recipe reads: output counts, bytes, manifest, staging, health."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def count_hs(out: Path) -> int:
    try:
        return sum(1 for n in os.listdir(out) if n.startswith("hs_") and n.endswith(".safetensors"))
    except OSError:
        return 0


def hs_bytes(out: Path) -> int:
    try:
        return sum(p.stat().st_size for p in out.glob("hs_*.safetensors"))
    except OSError:
        return 0


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False
