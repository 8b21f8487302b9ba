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
console = Console()
err_console = Console(stderr=True)


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
