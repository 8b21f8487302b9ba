"""Data is never markup: bracketed text in names, root causes, alerts and help is printed as written.

Rich reads `[word]` as a style tag; a run name, a traceback line or an alert title with brackets used to lose
them (`len(request.[block_hashes])` → `len(request.)`). One check per surface, on a real migrated history.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import eorch

from orchestrator.history import fingerprint_of
from orchestrator.store.db import open_store
from orchestrator.store.models import Alert, Host, Run

NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
NAME = "[bold]exp[/bold] [x]"
MESSAGE = "assert len(request.block_hashes) >= num_full_blocks [see kv/block.py]"
CAUSE = {"exception": "AssertionError", "process": "[EngineCore]", "signature": None, "message": MESSAGE,
         "traceback": f'Traceback (most recent call last):\n  File "/x/kv.py", line 9, in [check]\n'
                      f"AssertionError: {MESSAGE}\n"}
TITLE = "[alerts] run [x] failed"


@pytest.fixture
def history(eorch_home: Path) -> Path:
    maker = open_store(eorch_home / "eorch.db")
    with maker.begin() as s:
        s.add(Host(name="gpu", destination="testbox", port=None, root="/r", python="python3", created_at=NOW))
        for rid, age in (("b0000001", 2), ("b0000002", 1)):
            created = NOW - timedelta(days=age)
            s.add(Run(id=rid, name=NAME, host="gpu", kind="command", command=["echo", "[red]x[/red]"], env={},
                      cwd=None, spec=None, status="failed", phase="failed", created_at=created,
                      started_at=created, ended_at=created + timedelta(minutes=3), exit_code=1, root_cause=CAUSE,
                      exception="AssertionError", fingerprint=fingerprint_of(CAUSE), log_offset=0,
                      events_offset=0, cancel_requested=False))
        s.flush()
        s.add(Alert(dedup_key="b0000002:failed", kind="failed", run_id="b0000002", host="gpu", created_at=NOW,
                    title=TITLE, body="[b]body[/b]"))
    return eorch_home


class TestBracketsSurvive:
    def test_runs(self, history: Path) -> None:
        """`eorch runs` shows the bracketed name."""
        assert NAME in eorch("runs").stdout

    def test_show(self, history: Path) -> None:
        """`eorch show` shows the name, the command, the process and the message with their brackets."""
        out = eorch("show", "b0000002").stdout
        assert NAME in out and "echo '[red]x[/red]'" in out and "[EngineCore]" in out and MESSAGE in out
        assert "in [check]" in out

    def test_search(self, history: Path) -> None:
        """`eorch search block_hashes` keeps the matched word (and the brackets of the text)."""
        out = eorch("search", "block_hashes").stdout
        assert "len(request.block_hashes) >= num_full_blocks" in out and NAME in out

    def test_similar(self, history: Path) -> None:
        """`eorch similar` shows the run's name and message, and the earlier run's name."""
        out = eorch("similar", "b0000002").stdout
        assert out.count(NAME) == 2 and MESSAGE in out

    def test_alerts(self, history: Path) -> None:
        """`eorch alerts` shows the alert title as recorded."""
        assert TITLE in eorch("alerts").stdout

    def test_alerts_test_without_channels(self, history: Path) -> None:
        """`eorch alerts test` names the `[alerts]` table to add."""
        out = eorch("alerts", "test", env={"EORCH_ALERT_URLS": ""}).stdout
        assert "add `[alerts] urls = [...]` to config.toml" in out


def test_help_keeps_every_bracket(eorch_home: Path) -> None:
    """Every `--help` shows the bracketed words its help texts contain (`host add`: `[user@]host`)."""
    import typer.main

    from orchestrator.cli import main

    main._register_topics(["eorch"])
    root = typer.main.get_command(main.app)

    def commands(group, path):
        for name, cmd in getattr(group, "commands", {}).items():
            yield [*path, name], cmd
            yield from commands(cmd, [*path, name])

    checked = []
    for path, cmd in commands(root, []):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        wanted = [w.replace("\\[", "[") for t in texts for w in re.findall(r"\\?\[[^\]\s]+\]", t)]
        if not wanted:
            continue
        out = " ".join(eorch(*path, "--help").stdout.replace("│", " ").split())
        for word in wanted:
            assert word in out, f"eorch {' '.join(path)} --help lost {word!r}"
            checked.append((" ".join(path), word))
    assert ("host add", "[user@]") in checked
