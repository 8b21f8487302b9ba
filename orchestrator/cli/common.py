"""Helpers shared by the CLI topic modules: the context, async bridging, JSON output."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console

if TYPE_CHECKING:
    from orchestrator.context import Context

T = TypeVar("T")
#: The width of output that is not a terminal: no line is wrapped, so a traceback saved with
#: `eorch show RUN > tb.txt` can be pasted as it was.
PIPE_WIDTH = 100_000


def make_console(*, stderr: bool = False) -> Console:
    """Rich on a terminal; for a pipe or a file, lines as long as they are (soft wrap, no width limit)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, soft_wrap=True, width=PIPE_WIDTH)


console = make_console()
err_console = make_console(stderr=True)


def context() -> Context:
    from orchestrator.context import Context

    return Context.load()


def run_async(make: Callable[[Context], Awaitable[T]]) -> T:
    """Run one async service call with a fresh context, closing its host sessions afterwards."""
    ctx = context()

    async def main() -> T:
        try:
            return await make(ctx)
        finally:
            await ctx.close()

    return asyncio.run(main())


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
