"""`eorch similar|search|stats|export|prune`: the run history as something to learn from."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.table import Table
from rich.text import Text

from orchestrator.cli.common import check_limit, console, context, print_json, text
from orchestrator.core import history
from orchestrator.core.humanize import iso, span
from orchestrator.errors import UsageError
from orchestrator.logparse.events import name_shown
from orchestrator.services import history as service

RUN_CSV_COLUMNS = ("id", "name", "host", "kind", "status", "phase", "exit_code", "created_at", "started_at",
                   "ended_at", "model", "signature", "exception", "fingerprint", "vllm_version", "command")


def similar(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
    limit: Annotated[int, typer.Option(help="at most this many")] = 20,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Earlier runs that failed the same way (same fingerprint), how they ended, and what changed since."""
    check_limit(limit)
    found = service.similar(context(), run, limit=limit)
    target_record = found.run.history_record()
    if json_:
        print_json(found.to_json())
        return
    cause = target_record["root_cause"] or {}
    console.print(Text.assemble((target_record["id"], "bold"), f" {target_record['name']}: "
                                f"{name_shown(cause)}: {cause.get('message') or ''}"), highlight=False)
    console.print(f"fingerprint {target_record['fingerprint']}")
    if not found.similar:
        console.print("no earlier run failed this way")
        return
    table = Table("id", "name", "host", "created", "status", "exit", "what changed since then")
    for match in found.similar:
        r = match.run.record()
        table.add_row(text(r["id"]), text(r["name"]), text(r["host"]), r["created_at"], text(r["status"]),
                      "" if r["exit_code"] is None else str(r["exit_code"]), text(match.changed))
    console.print(table)


def search(
    words: Annotated[str, typer.Argument(help="words that must all appear in a root cause or traceback")],
    limit: Annotated[int, typer.Option(help="at most this many")] = 50,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Full-text search over root-cause exceptions, messages and tracebacks of every run."""
    check_limit(limit)
    hits = [hit.to_json() for hit in service.search(context(), words, limit=limit)]
    if json_:
        print_json(hits)
        return
    if not hits:
        console.print(f"no run mentions {words!r}", markup=False)
        return
    table = Table("id", "name", "host", "status", "created", "match")
    for hit in hits:
        r = hit["run"]
        snippet, plain, pos = Text(), hit["snippet_text"], 0
        for start, end in hit["snippet_matches"]:  # the matched words stand out; brackets in the text stay
            snippet.append_text(text(plain[pos:start]))
            match = text(plain[start:end])
            match.stylize("bold reverse")
            snippet.append_text(match)
            pos = end
        snippet.append_text(text(plain[pos:]))
        table.add_row(text(r["id"]), text(r["name"]), text(r["host"]), text(r["status"]), r["created_at"], snippet)
    console.print(table, highlight=False)


def stats(
    host: Annotated[str | None, typer.Option(help="only runs on this host")] = None,
    model: Annotated[str | None, typer.Option(help="only runs of this model path (or glob)")] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Runs, success rate, median load time, median time to failure and the top failure signatures."""
    figures = service.stats(context(), host=host, model=model)
    if json_:
        print_json(figures)
        return
    rate = figures["success_rate"]
    table = Table("runs", "success rate", "median load", "median time to failure", "by status", title="eorch stats")
    table.add_row(str(figures["runs"]), "—" if rate is None else f"{rate:.0%}", span(figures["median_load_s"]),
                  span(figures["median_time_to_failure_s"]),
                  ", ".join(f"{k} {v}" for k, v in sorted(figures["by_status"].items())))
    console.print(table)
    if figures["top_signatures"]:
        top = Table("signature", "runs", title="top failure signatures")
        for row in figures["top_signatures"]:
            top.add_row(text(row["signature"]), str(row["runs"]))
        console.print(top)


def _write_csv(out: TextIO, columns: Iterable[str], rows: Iterator[dict[str, Any]]) -> int:
    columns = list(columns)
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    n = 0
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
        n += 1
    return n


def export(
    format_: Annotated[str, typer.Option("--format", help="json (JSON lines) or csv")] = "json",
    table: Annotated[str, typer.Option(help="runs, events or all (csv: all needs --out DIR)")] = "all",
    out: Annotated[Path | None, typer.Option(help="file (or directory for csv of all); default stdout")] = None,
) -> None:
    """Export runs and events: JSON lines ({"type": "run"|"event", ...}) or CSV."""
    if format_ not in ("json", "csv") or table not in ("runs", "events", "all"):
        raise UsageError("--format is json or csv; --table is runs, events or all")
    if out is not None:
        _check_writable(out, directory=format_ == "csv" and table == "all")
    ctx = context()
    if format_ == "json":
        stream = out.open("w") if out else sys.stdout
        try:
            if table in ("runs", "all"):
                for record in service.export_runs(ctx):
                    stream.write(json.dumps({"type": "run", **record}, default=str) + "\n")
            if table in ("events", "all"):
                for record in service.export_events(ctx):
                    stream.write(json.dumps({"type": "event", **record}, default=str) + "\n")
        finally:
            if out:
                stream.close()
        return
    if table == "all":
        if out is None:
            raise UsageError("csv export of runs and events needs --out DIR (or --table runs|events)")
        out.mkdir(parents=True, exist_ok=True)
        with (out / "runs.csv").open("w", newline="") as f:
            n_runs = _write_csv(f, RUN_CSV_COLUMNS, service.export_runs(ctx))
        with (out / "events.csv").open("w", newline="") as f:
            n_events = _write_csv(f, service.EVENT_COLUMNS, service.export_events(ctx))
        console.print(f"wrote {n_runs} runs to {out / 'runs.csv'}, {n_events} events to {out / 'events.csv'}",
                      markup=False)
        return
    stream = out.open("w", newline="") if out else sys.stdout
    try:
        if table == "runs":
            _write_csv(stream, RUN_CSV_COLUMNS, service.export_runs(ctx))
        else:
            _write_csv(stream, service.EVENT_COLUMNS, service.export_events(ctx))
    finally:
        if out:
            stream.close()


def _check_writable(out: Path, *, directory: bool) -> None:
    """`--out` names a file in a directory that exists (or, for csv of all, a directory we can make)."""
    parent = out if directory else out.parent
    if directory:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UsageError(f"--out {out}: cannot make the directory: {err.strerror}") from None
    elif not parent.is_dir():
        raise UsageError(f"--out {out}: no directory {parent}; create it first")
    elif out.is_dir():
        raise UsageError(f"--out {out}: is a directory; give a file name")


def prune(
    before: Annotated[str, typer.Option(help="delete events older than this: an ISO date, or 30d, 12w …")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
) -> None:
    """Delete old events (never runs or alerts) after a confirmation."""
    cutoff = history.parse_since(before)
    ctx = context()
    count = service.count_events_before(ctx, cutoff)
    if count == 0:
        console.print(f"no events before {iso(cutoff)}")
        return
    if not yes and not typer.confirm(f"delete {count} events recorded before {iso(cutoff)} "
                                     "(runs are kept)?"):
        console.print("nothing deleted")
        raise typer.Exit(1)
    deleted = service.prune_events(ctx, cutoff)
    console.print(f"deleted {deleted} events")


def register(app: typer.Typer) -> None:
    app.command()(similar)
    app.command()(search)
    app.command()(stats)
    app.command()(export)
    app.command()(prune)
