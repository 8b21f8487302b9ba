"""Remote commands are argv; shell text comes only from shlex.join."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator import commands


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
