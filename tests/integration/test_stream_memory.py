"""A remote stream read slower than the link arrives does not pile up in memory (orchestrator.remote.ssh)."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

from orchestrator.remote.ssh import SshTarget, SshTransport

MB = 1 << 20


async def read_slowly(transport: SshTransport, total_mb: int) -> tuple[int, int]:
    """Read ``total_mb`` of zeros 64 KB at a time, pausing after each read; (bytes read, peak traced)."""
    await transport.connect()
    try:
        proc = await transport.start(["head", "-c", f"{total_mb}M", "/dev/zero"])
        tracemalloc.start()
        read = 0
        try:
            while chunk := await proc.read(64 * 1024):
                read += len(chunk)
                await asyncio.sleep(0.002)  # a follower busy parsing and committing
            return read, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            await proc.stop()
    finally:
        await transport.close()


class TestStreamMemory:
    def test_a_slow_reader_holds_a_few_windows_not_the_backlog(self, sshd, tmp_path: Path) -> None:
        """40 MB read at a pace slower than loopback ssh: at most a few 2 MB windows are held at once
        (before: the channel kept buffering and held most of the stream)."""
        config = tmp_path / "ssh_config"
        config.write_text(sshd.ssh_config())
        transport = SshTransport("box", SshTarget("testbox", ssh_config=(str(config),)))
        read, peak = asyncio.run(read_slowly(transport, 40))
        assert read == 40 * MB
        assert peak < 12 * MB, f"peak {peak / MB:.1f} MB held while reading"
