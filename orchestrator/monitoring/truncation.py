"""When a followed log counts as truncated or replaced: decided only from evidence that cannot be stale.

Pure. The host's liveness report (size, inode) is a snapshot taken at some moment; the follower goes on
reading meanwhile. A follower that read past that size has not seen a truncation, only a file that grew
after the snapshot. So the size is compared with what had been read *before the host was asked*: those
bytes existed before the snapshot, and a snapshot smaller than them means the file did shrink. A new
inode means the file was replaced, whatever its size.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Truncation:
    size: int
    read_before: int
    replaced: bool


def truncation(*, size: int, inode: int | None, known_inode: int | None, read_before: int) -> Truncation | None:
    """A truncation (or replacement) proven by the snapshot, or None.

    ``read_before``: bytes of this log the follower had read before the snapshot was requested.
    """
    replaced = known_inode is not None and inode is not None and inode != known_inode
    if replaced or size < read_before:
        return Truncation(size, read_before, replaced)
    return None
