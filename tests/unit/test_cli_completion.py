"""Shell completion: `eorch completion bash` prints a script that, sourced in a real bash, completes
command names, subcommands, options and choices by asking eorch (the `_EORCH_COMPLETE` protocol)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent  # the venv's `eorch` console script, as the script calls it


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "EORCH_HOME": str(tmp_path), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra}


def _bash_completes(tmp_path: Path, *words: str) -> list[str]:
    """What bash offers for the command line ``words`` (the last one being typed), via the printed script."""
    line = " ".join(f"'{w}'" for w in words)
    code = (f'source <(eorch completion bash) && COMP_WORDS=({line}) && COMP_CWORD={len(words) - 1} '
            '&& _eorch_completion eorch && printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", code], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=120, check=True)
    return [w for w in proc.stdout.splitlines() if w]


def test_the_bash_script_is_printed(tmp_path: Path) -> None:
    """The script defines the completion function and registers it for `eorch`."""
    out = subprocess.run([BIN / "eorch", "completion", "bash"], capture_output=True, text=True, env=_env(tmp_path),
                         timeout=120, check=True).stdout
    assert "_EORCH_COMPLETE=complete_bash" in out and "complete -o default -F _eorch_completion eorch" in out


@pytest.mark.parametrize("shell, needle", [("zsh", "#compdef eorch"), ("fish", "complete --command eorch")])
def test_zsh_and_fish_scripts_are_printed(tmp_path: Path, shell: str, needle: str) -> None:
    out = subprocess.run([BIN / "eorch", "completion", shell], capture_output=True, text=True, env=_env(tmp_path),
                         timeout=120, check=True).stdout
    assert needle in out


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([BIN / "eorch", "completion", "csh"], capture_output=True, text=True, env=_env(tmp_path),
                          timeout=120, check=False)
    assert proc.returncode == 2 and "'csh' is not one of 'bash', 'zsh', 'fish'" in proc.stderr


@pytest.mark.parametrize("words, offered", [
    (("eorch", "ru"), ["runs"]),
    (("eorch", "host", "a"), ["add"]),
    (("eorch", "runs", "--st"), ["--status"]),
    (("eorch", "completion", "z"), ["zsh"]),
])
def test_bash_completes(tmp_path: Path, words: tuple[str, ...], offered: list[str]) -> None:
    """`eorch ru<TAB>` offers `runs`; a group's subcommands, a command's options and a choice likewise."""
    assert _bash_completes(tmp_path, *words) == offered


def test_the_protocol_without_a_shell(tmp_path: Path) -> None:
    """The shell's question as environment variables (zsh's form): command names with their help."""
    proc = subprocess.run([BIN / "eorch"], capture_output=True, text=True, timeout=120, check=True,
                          env=_env(tmp_path, _EORCH_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="eorch sh"))
    assert '"show":"Everything known about one run."' in proc.stdout
