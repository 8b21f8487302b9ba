"""Lazy command registration: `eorch --help` lists every command without importing any topic, a command
imports only its own topic, and the static command table stays equal to what the topics register."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.main import get_command
from typer.testing import CliRunner

from orchestrator.cli import main


def _all_topics_app() -> typer.Typer:
    return main.make_app(["eorch", "no-such-command"])  # an unknown word registers every topic


def _listing(app: typer.Typer) -> str:
    result = CliRunner().invoke(app, ["--help"], prog_name="eorch", env={"COLUMNS": "200"}, terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


class TestCommandTable:
    def test_the_table_names_each_command_with_its_topic_and_help(self) -> None:
        """COMMANDS holds exactly the commands each topic registers, with the first paragraph of its help."""
        import importlib

        for topic in main.TOPICS:
            app = typer.Typer()
            app.callback()(lambda: None)
            importlib.import_module(topic).register(app)
            group = get_command(app)
            ctx = group.make_context("eorch", [], resilient_parsing=True)
            names = group.list_commands(ctx)  # type: ignore[attr-defined]
            assert sorted(names) == sorted(n for n, t, _ in main.COMMANDS if t == topic), topic
            for name in names:
                command = group.get_command(ctx, name)  # type: ignore[attr-defined]
                first_paragraph = " ".join((command.help or "").split("\n\n")[0].split())
                assert first_paragraph == {n: h for n, _, h in main.COMMANDS}[name]

    def test_the_lazy_listing_is_the_full_one(self) -> None:
        """`eorch --help` built from the table reads exactly as with every topic imported."""
        assert _listing(main.make_app(["eorch", "--help"])) == _listing(_all_topics_app())


def _imported_by(*argv: str, home: Path) -> list[str]:
    code = (
        "import json, sys; sys.argv = ['eorch', *sys.argv[1:]]\n"
        "from orchestrator.cli.main import run\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-P", "-c", code, *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "EORCH_HOME": str(home)}, check=True)
    return json.loads(proc.stderr.strip().splitlines()[-1])  # type: ignore[no-any-return]


class TestWhatStartUpImports:
    def test_help_imports_no_topic_and_none_of_the_heavy_libraries(self, tmp_path: Path) -> None:
        """`eorch --help`: no sqlalchemy, asyncssh, pydantic, and no topic module."""
        modules = _imported_by("--help", home=tmp_path)
        heavy = [m for m in modules if m.split(".")[0] in ("sqlalchemy", "asyncssh", "pydantic", "alembic")]
        assert heavy == []
        light = ("orchestrator.cli.main", "orchestrator.cli.examples")  # the examples table: plain data
        assert [m for m in modules if m.startswith("orchestrator.cli.") and m not in light] == []

    def test_runs_imports_only_its_topic(self, tmp_path: Path) -> None:
        """`eorch runs` imports the runs topic only, and neither the monitor, the launcher nor asyncssh."""
        modules = _imported_by("runs", home=tmp_path)
        topics = {m for m in modules if m in main.TOPICS}
        assert topics == {"orchestrator.cli.runs"}
        monitor = {"orchestrator.monitor", "orchestrator.monitoring.watcher"}
        assert not {*monitor, "orchestrator.actions.launcher", "asyncssh"} & set(modules)


class TestGroupsAcrossTopics:
    def test_host_setup_is_there_when_only_the_host_command_is_loaded(self) -> None:
        """`eorch host setup` is registered by the tools topic: loading `host` alone must bring it."""
        group = get_command(main.make_app(["eorch", "host", "setup", "--help"]))
        ctx = group.make_context("eorch", ["host"], resilient_parsing=True)
        host = group.get_command(ctx, "host")  # type: ignore[attr-defined]
        assert "setup" in host.list_commands(ctx)  # type: ignore[union-attr]
