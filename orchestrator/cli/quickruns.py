"""`eorch runs` on its short path: the plain listing of ended runs, before typer or SQLAlchemy is imported.

`main.run` offers the command line here first. Only the common forms are taken (`runs`, with `--wide`/`-w`,
`--json`, `--limit N`, `--status S`, `--[no-]refresh`) and only when `services.quickruns` can answer from
the history alone; anything else (another option, a bad value, help, no history, an active run) returns
False and the full command runs, with its checks and its messages. Both print the same bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from orchestrator.cli.common import MAX_LIMIT
from orchestrator.core.runstate import STATUSES


@dataclass
class _Asked:
    wide: bool = False
    json: bool = False
    limit: int = 50
    status: str | None = None


def _parse(args: list[str]) -> _Asked | None:
    """The options of a plain listing, or None for anything this path leaves to the full command."""
    asked = _Asked()
    words = iter(args)
    for word in words:
        name, eq, value = word.partition("=")
        if word in ("-w", "--wide"):
            asked.wide = True
        elif word == "--json":
            asked.json = True
        elif word in ("--refresh", "--no-refresh"):
            pass  # only ended runs are listed here: there is nothing to bring up to date either way
        elif name in ("--limit", "--status"):
            value = value if eq else next(words, "")
            if name == "--limit":
                if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_LIMIT:
                    return None
                asked.limit = int(value)
            elif value in STATUSES:
                asked.status = value
            else:
                return None
        else:
            return None
    return asked


def quick_runs(args: list[str]) -> bool:
    """List the runs if this path can; whether it did (``args``: the words after `runs`)."""
    asked = _parse(args)
    if asked is None or os.environ.get("EORCH_QUICK") == "0":  # 0: always the full path (to compare the two)
        return False
    from orchestrator.paths import DB_NAME, default_home
    from orchestrator.services.quickruns import ended_runs

    found = ended_runs(default_home(os.environ) / DB_NAME, asked.status, asked.limit)
    if found is None:
        return False
    from orchestrator.cli.common import console, err_console, print_json
    from orchestrator.cli.listing import listing_records, print_listing

    views, anything = found
    records = listing_records(views)
    if asked.json:
        print_json(records)
    else:
        print_listing(console, err_console, records, anything=anything, wide=asked.wide)
    return True
