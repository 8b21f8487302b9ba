"""The worker bundle: eorch's remote side as a deterministic tarball, addressed by its content hash."""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

WORKER_PACKAGE = Path(__file__).resolve().parents[2] / "worker"
_SUFFIXES = {".py", ".toml", ".json", ".txt"}


@dataclass(frozen=True)
class Bundle:
    digest: str  # first 16 hex chars of the sha256 of the file contents
    tarball: bytes


def _files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix in _SUFFIXES and "__pycache__" not in p.parts
    )


@functools.lru_cache(maxsize=1)
def worker_bundle(root: Path = WORKER_PACKAGE) -> Bundle:
    files = _files(root)
    digest = hashlib.sha256()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for path in files:
            rel = Path("worker") / path.relative_to(root)
            data = path.read_bytes()
            digest.update(str(rel).encode() + b"\0" + data + b"\0")
            info = tarfile.TarInfo(str(rel))
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return Bundle(digest=digest.hexdigest()[:16], tarball=buf.getvalue())
