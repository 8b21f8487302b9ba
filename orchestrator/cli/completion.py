"""`eorch completion bash|zsh|fish`: the shell's completion script, and answering the shell's questions.

The script (typer's) asks eorch itself: the shell runs `eorch` with ``_EORCH_COMPLETE=complete_bash`` (zsh,
fish: ``complete_zsh``, ``complete_fish``) and the words typed so far (bash: ``COMP_WORDS``/``COMP_CWORD``;
zsh, fish: ``_TYPER_COMPLETE_ARGS``); cli/main.py loads only the topic of the command being completed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

import typer

from orchestrator.cli.main import COMPLETE_VAR

PROG = "eorch"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completion(shell: Annotated[Shell, typer.Argument(help="the shell to complete eorch's commands in")]) -> None:
    """Print the shell completion script for bash, zsh or fish (source it, or save it where the shell looks)."""
    from typer._completion_shared import get_completion_script

    print(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value))


def words_typed(env: Mapping[str, str] = os.environ) -> list[str]:
    """The command line being completed, its last (incomplete) word left out, as an argv: `eorch runs --`."""
    from typer._click.shell_completion import split_arg_string

    if "COMP_WORDS" in env:  # bash
        words = split_arg_string(env["COMP_WORDS"])
        return words[:int(env.get("COMP_CWORD") or len(words))]
    line = env.get("_TYPER_COMPLETE_ARGS", "")  # zsh, fish: the line up to the cursor
    words = split_arg_string(line)
    return words if line.endswith(" ") else words[:-1]


def enable_shells() -> None:
    """Typer's bash/zsh/fish answerers (the format its scripts read), which `add_completion=False` leaves out."""
    from typer._completion_classes import completion_init

    completion_init()


def register(app: typer.Typer) -> None:
    app.command()(completion)
