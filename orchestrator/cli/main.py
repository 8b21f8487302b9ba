"""The ``eorch`` command: a thin shell over the services.

Each topic lives in its own module with a ``register(app)`` function; this module wires them and maps
``EorchError`` to one clear line on stderr and a non-zero exit.

Start-up is kept short: only the topic of the command being run is imported (sqlalchemy, asyncssh and
pydantic stay unimported for ``eorch --help`` and for commands that do not need them); ``eorch --help``
lists the commands from ``COMMANDS`` without importing any topic. tests/unit/test_cli_registration.py
keeps ``COMMANDS`` equal to what the topics register.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import typer

# Every top-level command: (name, topic module that registers it, its one-line help as `eorch --help` shows
# it). In the order of that listing: plain commands first, then command groups, each in topic order.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("launch", "orchestrator.cli.runs",
     "Start a command (after `--`) or a job spec detached on a host; returns at once with the run id."),
    ("runs", "orchestrator.cli.runs",
     "List runs, newest first, filtered by status, host, age, name, failure signature, exception or model."),
    ("show", "orchestrator.cli.runs", "Everything known about one run."),
    ("logs", "orchestrator.cli.runs",
     "Print the run's log from the host, with the job's escape sequences and control characters removed."),
    ("cancel", "orchestrator.cli.runs",
     "Stop a run: TERM its process group and everything it spawned, KILL after a grace period."),
    ("rerun", "orchestrator.cli.rerun",
     "Launch a run again: the same command line, env, cwd, host and patch set, or the same recorded spec."),
    ("preflight", "orchestrator.cli.preflight",
     "Check a spec against the host without starting anything; exits 1 when a check fails."),
    ("retry", "orchestrator.cli.retry",
     "Run a kept server's client again: speculators resumes the missing samples, no model reload."),
    ("watch", "orchestrator.cli.watch",
     "Follow active runs: record their logs and status, show progress. Ctrl-C stops watching, not jobs."),
    ("matrix", "orchestrator.cli.patch", "Run outcomes by (vllm, speculators, patch set): what works with what."),
    ("similar", "orchestrator.cli.history",
     "Earlier runs that failed the same way (same fingerprint), how they ended, and what changed since."),
    ("search", "orchestrator.cli.history",
     "Full-text search over root-cause exceptions, messages and tracebacks of every run."),
    ("stats", "orchestrator.cli.history",
     "Runs, success rate, median load time, median time to failure and the top failure signatures."),
    ("export", "orchestrator.cli.history",
     'Export runs and events: JSON lines ({"type": "run"|"event", ...}) or CSV.'),
    ("prune", "orchestrator.cli.history", "Delete old events (never runs or alerts) after a confirmation."),
    ("tui", "orchestrator.cli.tui",
     "Launch, watch and investigate runs in a terminal dashboard. Quitting never stops a job."),
    ("convert-legacy", "orchestrator.cli.tools",
     "Convert the old generator's data_{i}.pt into hs_{i}.safetensors (layer ids relabelled +1)."),
    ("completion", "orchestrator.cli.completion",
     "Print the shell completion script for bash, zsh or fish (source it, or save it where the shell looks)."),
    ("host", "orchestrator.cli.hosts", "Hosts eorch can run jobs on (the built-in `local` is always there)."),
    ("log", "orchestrator.cli.log", "Understand job logs offline."),
    ("patch", "orchestrator.cli.patch",
     "Patch sets: check, apply, revert installed packages on a host, all files or none."),
    ("alerts", "orchestrator.cli.alerts", "Alerts raised for runs and hosts, and their channels."),
    ("daemon", "orchestrator.cli.daemon",
     "Run the monitor headless for all hosts; install|uninstall|status manage its systemd/launchd user service."),
)
# Registration order of the topics when all are needed (it decides the order of the listing above).
TOPICS = (
    "orchestrator.cli.hosts", "orchestrator.cli.runs", "orchestrator.cli.rerun", "orchestrator.cli.preflight", "orchestrator.cli.retry",
    "orchestrator.cli.log", "orchestrator.cli.watch", "orchestrator.cli.patch", "orchestrator.cli.alerts",
    "orchestrator.cli.history", "orchestrator.cli.daemon", "orchestrator.cli.tui", "orchestrator.cli.tools",
    "orchestrator.cli.completion",
)
TOPIC_OF = {name: topic for name, topic, _ in COMMANDS}
# Topics that add subcommands to another topic's group (`eorch host setup` lives in tools).
EXTENDS = {"host": ("orchestrator.cli.tools",)}
# Set by the completion script when the shell runs eorch to complete a command line (cli/completion.py).
COMPLETE_VAR = "_EORCH_COMPLETE"
HELP = "Launch, follow and understand long GPU jobs on remote hosts over SSH."


def command_word(argv: list[str]) -> str | None:
    """The command a command line runs (the first word that is not an option), or None (`eorch --help`)."""
    return next((a for a in argv[1:] if not a.startswith("-")), None)


def make_app(argv: list[str], completing: bool = False) -> typer.Typer:
    """The typer app for this command line: the command's topic only; every topic for an unknown command
    (so that click can suggest the right one); no topic at all for the top-level help, nor for completing
    a command's name (``completing``: ``argv`` is the words typed so far)."""
    import typer

    # Help is plain text (rich_markup_mode=None): Rich's help would read `[user@]host` as markup and label
    # every flag `<bool>`; click's shows a flag as `--json` / `--refresh / --no-refresh`.
    app = typer.Typer(name="eorch", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False,
                      add_completion=False, rich_markup_mode=None)
    app.callback(help=HELP)(_group)  # a group even when one command is registered (typer would flatten it)
    word = command_word(argv)
    topic = TOPIC_OF.get(word or "")
    if word is None or (topic is None and completing):
        for name, _, summary in COMMANDS:
            app.command(name, help=summary, add_help_option=False)(_listed_only)
    else:
        for module in (topic, *EXTENDS.get(word or "", ())) if topic else TOPICS:
            importlib.import_module(module).register(app)
    _help_as_written(app)
    return app


def _help_as_written(app: typer.Typer, path: str = "") -> None:
    """Every command and group of ``app``: plain-text help, with its examples (cli/examples.py) at the end."""
    from typer.main import get_command_name
    from typer.models import DefaultPlaceholder

    from orchestrator.cli.examples import epilog

    def named(*names: object) -> str:
        return next(str(n) for n in names if n and not isinstance(n, DefaultPlaceholder))

    app.rich_markup_mode = None
    if not path:
        app.info.epilog = epilog("")
    for command in app.registered_commands:
        name = named(command.name, get_command_name(command.callback.__name__ if command.callback else ""))
        command.epilog = command.epilog or epilog(f"{path} {name}".strip())
    for group in app.registered_groups:
        assert group.typer_instance is not None
        name = named(group.name, group.typer_instance.info.name)
        group.epilog = epilog(f"{path} {name}".strip())
        _help_as_written(group.typer_instance, f"{path} {name}".strip())


def _group() -> None:
    """The top level does nothing itself; the command does."""


def _listed_only() -> None:
    """Stands in for a command in the top-level help; never run (a command line names its real command)."""
    raise AssertionError("a listing stub was invoked")


def run() -> None:
    """Console-script entry point."""
    if command_word(sys.argv) == "daemon":
        # Before anything else: a TERM from now on is handled (recorded, obeyed once the daemon can stop
        # cleanly), never the default death by signal while it imports or opens the history.
        from orchestrator.cli.termination import record_term

        record_term()
    argv, completing = sys.argv, bool(os.environ.get(COMPLETE_VAR))
    try:
        if completing:  # the shell asks (`eorch completion`): load the topic of the words typed so far
            from orchestrator.cli.completion import enable_shells, words_typed

            enable_shells()
            argv = words_typed()
        if not completing and argv[1:2] == ["runs"] and _quick_runs(argv[2:]):
            return
        app = make_app(argv, completing)
    except KeyboardInterrupt:  # Ctrl-C while the command is still being imported
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    from rich.markup import escape

    from orchestrator.errors import EorchError

    try:
        rc = app(prog_name="eorch", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe shows up here, not in the interpreter's exit
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except OSError as err:
        _output_error(err)
    except EorchError as err:
        _err_console().print(f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        _err_console().print("interrupted")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as err:  # usage errors (missing argument, bad option) arrive here in non-standalone mode
        import typer

        if isinstance(err, _click_errors()):
            # One line, as every error of eorch's: what is wrong, and where the help is (click's own show()
            # prints the usage, a pointer to --help and an empty line first).
            ctx = getattr(err, "ctx", None)
            if type(err).__name__ == "NoArgsIsHelpError":  # (`eorch log`: its message is the help)
                err.show()  # type: ignore[attr-defined]
            else:
                what = err.format_message().rstrip(".")  # type: ignore[attr-defined]
                where = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
                _err_console().print(f"[bold red]error:[/] {escape(what + where)}", highlight=False, soft_wrap=True)
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        if isinstance(err, typer.Abort):
            _err_console().print("aborted")
            sys.exit(1)
        if os.environ.get("EORCH_DEBUG"):
            raise
        # A bug of eorch's: one line that says so, not a traceback (EORCH_DEBUG=1 shows it).
        _err_console().print(f"[bold red]error:[/] internal error ({escape(type(err).__name__)}: {escape(str(err))}); "
                             "this is a bug in eorch: run again with EORCH_DEBUG=1 for the traceback and report it",
                             highlight=False, soft_wrap=True)
        sys.exit(1)


def _quick_runs(args: list[str]) -> bool:
    """`eorch runs` of ended runs, without typer or SQLAlchemy (cli/quickruns.py); whether it was listed."""
    from orchestrator.cli.quickruns import quick_runs

    try:
        done = quick_runs(args)
        sys.stdout.flush()
    except OSError as err:
        _output_error(err)
    return done


def _output_error(err: OSError) -> NoReturn:
    """The output could not be written: one line (none for a closed pipe), exit 1; other errors go on up.  A
    reader that stopped early (`| head`) needs no message, and a command whose status is its answer (`--check`)
    still gives it."""
    if not _output_failed(err):
        raise err
    if err.errno == errno.EPIPE:
        from orchestrator.cli import common

        sys.exit(1 if common.closed_pipe_status is None else common.closed_pipe_status)
    from rich.markup import escape

    _err_console().print(f"[bold red]error:[/] cannot write the output: {escape(err.strerror or str(err))}",
                         highlight=False, soft_wrap=True)
    sys.exit(1)


def _err_console() -> Any:
    """The inert stderr console (escape sequences in a message never reach the terminal), imported only
    when there is something to say: `eorch --help` stays light."""
    from orchestrator.cli.common import err_console

    return err_console


def _output_failed(err: OSError) -> bool:
    """Writing to stdout failed (a write error names no file; opening one does). stdout then goes to
    /dev/null, so the interpreter's own flush at exit prints no second traceback."""
    if err.filename is not None or err.errno not in (errno.ENOSPC, errno.EPIPE, errno.EDQUOT, errno.EIO, errno.EFBIG):
        return False
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return True


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
