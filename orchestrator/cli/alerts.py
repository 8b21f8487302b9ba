"""`eorch alerts [--run R] [--json]` lists alerts raised; `eorch alerts test` sends one to every channel."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from sqlalchemy import select

from orchestrator.cli.common import console, context, print_json
from orchestrator.store import queries
from orchestrator.store.models import Alert

alerts_app = typer.Typer(help="Alerts raised for runs and hosts, and their channels.", no_args_is_help=False)


def _iso(value: object) -> str | None:
    return value.isoformat(timespec="milliseconds") + "Z" if value is not None else None  # type: ignore[attr-defined]


@alerts_app.callback(invoke_without_command=True)
def list_alerts(
    typer_ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="only alerts of this run (id, prefix or name)")] = None,
    kind: Annotated[str | None, typer.Option(help="only alerts of this kind")] = None,
    limit: Annotated[int, typer.Option(help="at most this many")] = 100,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """List alerts raised, newest first, with how each channel took them."""
    if typer_ctx.invoked_subcommand is not None:
        return
    ctx = context()
    with ctx.db() as s:
        stmt = select(Alert).order_by(Alert.created_at.desc(), Alert.id.desc()).limit(limit)
        if run:
            stmt = stmt.where(Alert.run_id == queries.get_run(s, run).id)
        if kind:
            stmt = stmt.where(Alert.kind == kind)
        rows = list(s.scalars(stmt))
    records = [{"id": a.id, "kind": a.kind, "run_id": a.run_id, "host": a.host, "created_at": _iso(a.created_at),
                "title": a.title, "body": a.body, "dedup_key": a.dedup_key, "deliveries": a.deliveries or []}
               for a in rows]
    if json_:
        print_json(records)
        return
    if not records:
        console.print("no alerts yet")
        return
    table = Table("time", "kind", "run", "host", "title", "delivered")
    for r in records:
        delivered = ", ".join(f"{d['channel']} {'ok' if d['ok'] else 'FAILED'}" for d in r["deliveries"]) or "—"
        table.add_row(r["created_at"], r["kind"], r["run_id"] or "", r["host"] or "", r["title"], delivered)
    console.print(table, highlight=False)


@alerts_app.command("test")
def test_channels(
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Send a test alert to every configured channel and report each outcome."""
    from orchestrator.alerts import send_test

    deliveries = send_test(context())
    if json_:
        print_json([d.to_json() for d in deliveries])
    elif not deliveries:
        console.print("no alert channels configured: add `[alerts] urls = [...]` to config.toml "
                      "or set EORCH_ALERT_URLS")
    else:
        for d in deliveries:
            console.print(f"{d.channel}: " + ("delivered" if d.ok else f"FAILED after {d.attempts} attempts: {d.error}"),
                          highlight=False)
    if any(not d.ok for d in deliveries):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
