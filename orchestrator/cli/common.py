"""Helpers shared by the CLI topic modules: the context, async bridging, JSON output, inert consoles."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment
from rich.text import Text

if TYPE_CHECKING:
    from orchestrator.context import Context

T = TypeVar("T")


class _Inert:
    """A renderable whose text segments are made inert: the last guard, for Text built from a job's string
    without ``text()``. Styles eorch adds are rendered from segment styles afterwards, and Rich's own
    control segments (cursor moves of a live display) are kept."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control is None and not segment.text.isprintable():
                yield Segment(_inert(segment.text), segment.style)
            else:
                yield segment


class _InertHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Inert(r) for r in renderables]


class InertConsole(Console):
    """A Rich console that never sends a job's or a user's escape sequences to the terminal: every string
    it renders (printed, or a table cell) is made inert (logparse.inert) before markup is read, and every
    segment is checked again on the way out."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.push_render_hook(_InertHook())

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(_inert(text), **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _pipe_closed()


def _inert(value: str) -> str:
    from orchestrator.logparse.inert import inert

    return inert(value)


def text(value: object) -> Text:
    """A user's or a job's string as a Rich renderable: inert, and never read as markup (``[x]`` stays)."""
    return Text(_inert("" if value is None else str(value)))



#: The width of output that is not a terminal: no line is wrapped, so a traceback saved with
#: `eorch show RUN > tb.txt` can be pasted as it was.
PIPE_WIDTH = 100_000


def make_console(*, stderr: bool = False) -> Console:
    """Rich on a terminal; for a pipe or a file, lines as long as they are (soft wrap, no width limit)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return InertConsole(stderr=stderr)
    return InertConsole(stderr=stderr, soft_wrap=True, width=PIPE_WIDTH)


console = make_console()
err_console = make_console(stderr=True)


def context() -> Context:
    from orchestrator.context import Context

    return Context.load()


def run_async(make: Callable[[Context], Awaitable[T]]) -> T:
    """Run one async service call with a fresh context, closing its host sessions afterwards."""
    import asyncio  # not at the top: `eorch runs` of ended runs never needs it

    ctx = context()

    async def main() -> T:
        try:
            return await make(ctx)
        finally:
            await ctx.close()

    return asyncio.run(main())


#: The exit status a command means to end with once its output is written, for when the reader closes the pipe
#: first (``eorch log analyze --check x.log | head -1``): the answer the status gives is known by then.  None: a
#: closed pipe exits 1.
closed_pipe_status: int | None = None


def _pipe_closed() -> NoReturn:
    """The reader closed stdout's pipe (`| head`): exit as Rich and click do (stdout to /dev/null, no message),
    but with the status the command means (``closed_pipe_status``), not always 1."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(1 if closed_pipe_status is None else closed_pipe_status)


def exit_status_if_pipe_closes(status: int) -> None:
    """Say the status this command ends with, before writing its output (see ``closed_pipe_status``)."""
    global closed_pipe_status
    closed_pipe_status = status


MAX_LIMIT = 1_000_000


def check_limit(limit: int, option: str = "--limit") -> int:
    """A count the history can be asked for (SQLite integers are 64-bit; nobody reads a million rows)."""
    if not 1 <= limit <= MAX_LIMIT:
        from orchestrator.errors import UsageError

        raise UsageError(f"{option} must be between 1 and {MAX_LIMIT}")
    return limit


def print_json(value: Any) -> None:
    try:
        sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _pipe_closed()
