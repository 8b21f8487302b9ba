"""Truncation is decided from evidence that cannot be stale (orchestrator.monitoring.truncation)."""

from __future__ import annotations

from orchestrator.monitoring.truncation import truncation


class TestTruncation:
    def test_a_snapshot_older_than_what_was_read_since_is_no_truncation(self) -> None:
        """The follower read on after the snapshot was asked for: the file grew, nothing was truncated."""
        assert truncation(size=1000, inode=7, known_inode=7, read_before=900) is None

    def test_a_size_below_what_had_been_read_before_the_snapshot_is_a_truncation(self) -> None:
        """Bytes read before the host looked existed then; a smaller size means the file shrank."""
        found = truncation(size=10, inode=7, known_inode=7, read_before=900)
        assert found is not None and not found.replaced and found.size == 10

    def test_a_new_inode_is_a_replacement_whatever_the_size(self) -> None:
        """A log replaced by a larger file is still a new file."""
        found = truncation(size=5000, inode=8, known_inode=7, read_before=900)
        assert found is not None and found.replaced

    def test_an_unknown_inode_decides_nothing(self) -> None:
        """Before the first snapshot recorded the inode, only the size can tell."""
        assert truncation(size=1000, inode=8, known_inode=None, read_before=1000) is None
