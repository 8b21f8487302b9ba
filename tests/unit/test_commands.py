"""Remote commands are argv; shell text comes only from shlex.join."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core import commands


class TestShell:
    @given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\0"), max_size=30), min_size=1, max_size=6))
    def test_round_trips_through_a_real_shell_parser(self, argv: list[str]) -> None:
        """Whatever the words, the shell splits the text back into exactly the same argv."""
        assert shlex.split(commands.shell(argv)) == argv

    def test_bash_receives_metacharacters_verbatim(self) -> None:
        """A real bash passes `'; rm -rf ~; '` and `$HOME` through as data."""
        argv = ["printf", "%s\\n", "'; rm -rf ~; '", "$HOME", "`id`"]
        out = subprocess.run(["bash", "-c", commands.shell(argv)], capture_output=True, text=True, check=True)
        assert out.stdout.splitlines() == argv[2:]

    def test_empty_argv_is_refused(self) -> None:
        """There is no such thing as an empty command."""
        with pytest.raises(ValueError):
            commands.shell([])


def test_follow_file_is_one_based() -> None:
    """tail -c +N is 1-based: after OFF bytes we ask for +OFF+1."""
    assert commands.follow_file("/x/log", 0)[:3] == ["tail", "-c", "+1"]
    assert commands.follow_file("/x/log", 41)[2] == "+42"


class TestWorkerStart:
    def test_the_worker_runs_isolated_without_touching_pythonpath(self, tmp_path) -> None:
        """`python3 -I -c BOOT DIR worker.cli ...`: no `env PYTHONPATH=`, and the real interpreter, started in a
        directory with a stray json.py, runs the worker copy at DIR with its arguments."""
        argv = commands.worker("python3", "/srv/eorch/worker/abc", "agent")
        assert argv[:3] == ["python3", "-I", "-c"] and argv[-3:] == ["/srv/eorch/worker/abc", "worker.cli", "agent"]
        assert not any("PYTHONPATH" in a for a in argv)
        copy = tmp_path / "copy" / "worker"
        copy.mkdir(parents=True)
        (copy / "__init__.py").write_text("")
        (copy / "cli.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
        (tmp_path / "json.py").write_text("raise SystemExit('stray json.py imported')\n")
        out = subprocess.run(commands.worker("python3", str(tmp_path / "copy"), "call", "x", "{}"), cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        assert (out.returncode, out.stdout.strip()) == (0, '["call", "x", "{}"]'), out.stderr
