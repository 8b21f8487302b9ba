"""The ``eorch`` command: a thin shell over the services.

Each topic lives in its own module with a ``register(app)`` function; this module wires them and maps
``EorchError`` to one clear line on stderr and a non-zero exit.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from orchestrator.errors import EorchError

# Topic modules, each exposing register(app: typer.Typer) -> None.
TOPICS = (
    "orchestrator.cli.hosts",
    "orchestrator.cli.runs",
    "orchestrator.cli.preflight",
    "orchestrator.cli.log",
    "orchestrator.cli.watch",
    "orchestrator.cli.patch",
    "orchestrator.cli.alerts",
    "orchestrator.cli.history",
    "orchestrator.cli.daemon",
    "orchestrator.cli.tui",
    "orchestrator.cli.tools",
)

app = typer.Typer(
    name="eorch",
    help="Launch, follow and understand long GPU jobs on remote hosts over SSH.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


# Commands whose topic needs nothing else: `eorch log analyze` skips importing the history and SSH stack.
LIGHT_COMMANDS = {"log": "orchestrator.cli.log"}


def _register_topics(argv: list[str]) -> None:
    first = next((a for a in argv[1:] if not a.startswith("-")), None)
    light = LIGHT_COMMANDS.get(first or "")
    for name in (light,) if light else TOPICS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:  # topic not written yet
                continue
            raise
        module.register(app)


def run() -> None:
    """Console-script entry point."""
    _register_topics(sys.argv)
    err_console = Console(stderr=True)
    try:
        rc = app(prog_name="eorch", standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except EorchError as err:
        err_console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as err:  # usage errors (missing argument, bad option) arrive here in non-standalone mode
        if isinstance(err, _click_errors()):
            err.show()  # type: ignore[attr-defined]
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        if isinstance(err, typer.Abort):
            err_console.print("aborted")
            sys.exit(1)
        raise


def _click_errors() -> tuple[type[Exception], ...]:
    """Click's usage-error classes: typer vendors its own copy of click; plain click may be there too."""
    classes: list[type[Exception]] = []
    try:
        from typer._click.exceptions import ClickException as Vendored

        classes.append(Vendored)
    except ImportError:
        pass
    try:
        import click

        classes.append(click.exceptions.ClickException)
    except ImportError:
        pass
    return tuple(classes)

if __name__ == "__main__":
    run()
