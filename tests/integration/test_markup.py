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

from orchestrator.core.history import fingerprint_of
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

    root = typer.main.get_command(main.make_app(["eorch", "no-such-command"]))  # every topic registered

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


ENV_FP = {"python": "3.11.9 [GCC 12.2.0]", "vllm": "0.32.0", "vllm_dist": "vllm[cpu]", "torch": "2.6.0+cpu",
          "error": "[Errno 2] No such file: '/opt/[old]/python'", "hostname": "gpu[1]", "boot_id": "abcdef012345",
          "gpus": ["NVIDIA H200 [SXM]"], "driver": "570.1", "patch_sets": ["[set]"],
          "patched_files": {"/site/[x]/mod.py": {"sha256": "a", "expected": "b"}}}
PATCH_SET = {"name": "fix[1]", "files": {"m.py": {}}, "verified_at": "2026-01-01T00:00:00Z",
             "changed_since": {"at": "2026-01-02T00:00:00Z", "files": ["/site/[x]/mod.py"]}}


def test_env_lines_keep_brackets(eorch_home: Path) -> None:
    """`eorch show`'s environment lines (views.env_lines, also `host check --env` and the TUI header) print
    the host's versions, paths and probe error as they were."""
    eorch("host", "list")  # the history, with its built-in `local` host
    maker = open_store(eorch_home / "eorch.db")
    with maker.begin() as s:
        s.add(Run(id="e0000001", name="env", host="local", kind="command", command=["true"], env={}, cwd=None,
                  spec=None, status="succeeded", phase="done", created_at=NOW, started_at=NOW, ended_at=NOW,
                  exit_code=0, log_offset=0, events_offset=0, cancel_requested=False, env_fingerprint=ENV_FP,
                  patch_set=PATCH_SET))
    out = eorch("show", "e0000001", "--no-refresh").stdout
    for word in ("Python 3.11.9 [GCC 12.2.0]", "vllm 0.32.0 (vllm[cpu])",
                 "probe failed: [Errno 2] No such file: '/opt/[old]/python'", "machine: gpu[1]", "NVIDIA H200 [SXM]",
                 "(sets: [set])", "not as patched: /site/[x]/mod.py", "patch set: fix[1] (1 files",
                 "(seen 2026-01-02T00:00:00Z): /site/[x]/mod.py"):
        assert word in out, word


def _tiny_patch_set(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A package `brk` 1.0 in a venv whose path has brackets, and a patch set changing its mod.py."""
    import hashlib
    import subprocess
    import sys

    venv = tmp_path / "venv [red]x[/red]"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*")) / "site-packages"
    (site / "brk").mkdir()
    before, after = "VALUE = 1\n", "VALUE = 2\n"
    (site / "brk" / "__init__.py").write_text("")
    (site / "brk" / "mod.py").write_text(before)
    (site / "brk-1.0.dist-info").mkdir()
    (site / "brk-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: brk\nVersion: 1.0\n")
    set_dir = tmp_path / "brk-fix"
    set_dir.mkdir()
    (set_dir / "mod.diff").write_text("--- a/brk/mod.py\n+++ b/brk/mod.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n")

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    (set_dir / "manifest.toml").write_text(
        'name = "brk-fix"\ndistribution = "brk"\nversions = ["1.0"]\n\n[[files]]\npath = "brk/mod.py"\n'
        f'diff = "mod.diff"\nsha256_before = "{sha(before)}"\nsha256_after = "{sha(after)}"\n')
    return venv / "bin" / "python", site / "brk" / "mod.py", set_dir


def test_patch_output_keeps_brackets(eorch_home: Path, tmp_path: Path) -> None:
    """`eorch patch check|apply|actions` print the interpreter's and the files' paths as they are."""
    python, target, set_dir = _tiny_patch_set(tmp_path)
    out = eorch("patch", "check", "--python", str(python), str(set_dir)).stdout
    assert f"original  {target}" in out and "venv [red]x[/red]" in out.splitlines()[0]
    out = eorch("patch", "apply", "--python", str(python), str(set_dir)).stdout
    assert str(target) in out and f"applied 1 file(s), verified by {python};" in out
    assert target.read_text() == "VALUE = 2\n"
    out = eorch("patch", "actions").stdout
    assert out.count("venv [red]x[/red]") == 2  # the python column of the check and the apply


def test_usage_errors_keep_brackets(eorch_home: Path) -> None:
    """A click usage error quotes the mistyped word as typed."""
    proc = eorch("[bold]runs", check=False)
    assert proc.returncode == 2 and "No such command '[bold]runs'" in proc.stderr
    proc = eorch("runs", "--limit", "[red]5[/red]", "--no-such[x]", check=False)
    assert proc.returncode == 2 and "No such option: --no-such[x]" in proc.stderr


def test_host_list_shows_reachability_as_words_not_tags(eorch_home: Path) -> None:
    """`host list`'s reachable column is styled text: `yes`, `no since …`, `?`, never the tags themselves."""
    eorch("host", "list")  # the history, with its built-in `local` host
    maker = open_store(eorch_home / "eorch.db")
    with maker.begin() as s:
        s.add(Host(name="up", destination="u@box1", port=None, root="/r", python="python3", created_at=NOW,
                   reachable=True))
        s.add(Host(name="down", destination="u@box2", port=2222, root="/r", python="python3", created_at=NOW,
                   reachable=False, unreachable_since=NOW))
    out = eorch("host", "list").stdout
    rows = {line.split("│")[1].strip(): line.split("│")[5].strip() for line in out.splitlines()
            if line.startswith("│")}
    assert rows == {"local": "?", "up": "yes", "down": f"no since {NOW.isoformat()}Z"}, out
    assert "[green]" not in out and "[red]" not in out and "[/]" not in out


def test_preflight_evidence_keeps_brackets(eorch_home: Path) -> None:
    """A preflight check's evidence and advice are the host's text: `eorch show` prints them as written (a
    stray `[/]` used to be able to crash the command)."""
    eorch("host", "list")
    report = {"verdict": "fail", "failed": 1, "warnings": 0, "checks": [
        {"id": "engine", "status": "fail", "evidence": "[Errno 2] No such file: '/opt/[old]/python' [/]",
         "todo": "pip install 'vllm[cpu]'"}]}
    maker = open_store(eorch_home / "eorch.db")
    with maker.begin() as s:
        s.add(Run(id="p0000001", name="pf", host="local", kind="command", command=["true"], env={}, cwd=None,
                  spec=None, status="failed", phase="failed", created_at=NOW, started_at=NOW, ended_at=NOW,
                  exit_code=1, log_offset=0, events_offset=0, cancel_requested=False, preflight=report))
    out = eorch("show", "p0000001", "--no-refresh")
    assert out.returncode == 0, out.stderr
    assert "FAIL engine: [Errno 2] No such file: '/opt/[old]/python' [/]" in out.stdout
    assert "→ pip install 'vllm[cpu]'" in out.stdout
