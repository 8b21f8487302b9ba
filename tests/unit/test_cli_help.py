"""Every `--help` of eorch: an "Examples:" section, no `<bool>` label on a flag, brackets as written.

Help is plain text (click's formatting, no Rich markup): Rich's help labelled every flag `<bool>` and read
`[user@]host` as a style tag unless it was escaped (and an escape then showed in plain output as `\\[`).
Each command's help is built as the real command line builds it (only its topic registered).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from orchestrator.cli import main


def _paths(group: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(getattr(group, "commands", {}).items()):
        yield (*path, name)
        yield from _paths(command, (*path, name))


EVERY_COMMAND = [(), *_paths(get_command(main.make_app(["eorch", "no-such-command"])))]


def _help(*path: str) -> str:
    app = main.make_app(["eorch", *path, "--help"])
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="eorch", env={"COLUMNS": "100"},
                                terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", EVERY_COMMAND, ids=lambda p: " ".join(p) or "eorch")
def test_every_help_has_examples_and_no_type_label_on_flags(path: tuple[str, ...]) -> None:
    """`eorch … --help` ends with examples that run this very command; a flag has no `<bool>`, and no
    backslash escapes are shown."""
    out = _help(*path)
    assert "<bool>" not in out
    assert "\\[" not in out
    examples = out.split("Examples:\n", 1)[1]
    commands = [line.split("#")[0].split() for line in examples.splitlines() if line.strip()]
    assert commands and all(c[:len(path) + 1] == ["eorch", *path] for c in commands), examples


def test_flags_read_as_flags() -> None:
    """A flag is shown as itself, an on/off pair as `--refresh / --no-refresh`, a valued option with its type."""
    out = _help("runs")
    assert re.search(r"^\s+--json\s+print JSON$", out, re.MULTILINE)
    assert "--refresh / --no-refresh" in out
    assert "--limit <int>" in out


@pytest.mark.parametrize("path, words", [
    (("host", "add"), ("[user@]host", "eorch host add gpu1 me@gpu-box              # [user@]host")),
    (("launch",), ("`[monitor] auto_start = false`", "--set 'eagle3.layer_ids=[2,4,9]'")),
    (("export",), ('{"type": "run"|"event", ...}',)),
])
def test_brackets_survive(path: tuple[str, ...], words: tuple[str, ...]) -> None:
    """Bracketed text in help texts and examples is printed as written."""
    out = " ".join(_help(*path).split())
    for word in words:
        assert " ".join(word.split()) in out
