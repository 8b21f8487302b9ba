"""`eorch alerts [--run R] [--json]` lists alerts raised; `eorch alerts test` sends one to every channel."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer
from rich.table import Table

from orchestrator.alerts import outbox as alertoutbox
from orchestrator.cli.common import check_limit, console, context, print_json, text
from orchestrator.errors import UsageError

alerts_app = typer.Typer(help="Alerts raised for runs and hosts, and their channels.", no_args_is_help=False)


@alerts_app.callback(invoke_without_command=True)
def list_alerts(
    typer_ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="only alerts of this run (id, prefix or name)")] = None,
    kind: Annotated[str | None, typer.Option(help="only alerts of this kind")] = None,
    state: Annotated[str | None, typer.Option(help="only alerts with a delivery in this state: "
                                              + ", ".join(alertoutbox.STATES))] = None,
    limit: Annotated[int, typer.Option(help="at most this many")] = 100,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """List alerts raised, newest first, with each channel's delivery: sent, pending, failed or expired."""
    if typer_ctx.invoked_subcommand is not None:
        return
    if state is not None and state not in alertoutbox.STATES:
        raise UsageError(f"unknown delivery state {state!r}; known: {', '.join(alertoutbox.STATES)}")
    check_limit(limit)
    from orchestrator.services import alerts

    records = [a.record() for a in alerts.recent(context(), run=run, kind=kind, state=state, limit=limit)]
    if json_:
        print_json(records)
        return
    if not records:
        console.print("no alerts yet" if not (run or kind or state) else "no alerts match")
        return
    table = Table("time", "kind", "run", "host", "title", "delivery")
    for r in records:
        delivery = "\n".join(alertoutbox.describe(d) for d in r["deliveries"]) or "— (no channel)"
        table.add_row(r["created_at"], text(r["kind"]), text(r["run_id"]), text(r["host"]), text(r["title"]),
                      text(delivery))
    console.print(table, highlight=False)
    _print_problems([d for r in records for d in r["deliveries"]])


def _print_problems(deliveries: list[dict[str, Any]]) -> None:
    counts = Counter(d["state"] for d in deliveries)
    notes = []
    if counts[alertoutbox.FAILED]:
        n = counts[alertoutbox.FAILED]
        notes.append(f"{n} {'delivery' if n == 1 else 'deliveries'} FAILED after all retries "
                     "(`eorch alerts test` checks the channels)")
    if counts[alertoutbox.EXPIRED]:
        notes.append(f"{counts[alertoutbox.EXPIRED]} EXPIRED: still pending when a monitor started after the "
                     "re-send window ([alerts] resend_window_minutes)")
    if counts[alertoutbox.PENDING]:
        notes.append(f"{counts[alertoutbox.PENDING]} pending: being sent, or left by a monitor that stopped; "
                     "the next monitor to start re-sends them")
    for note in notes:
        console.print(note, highlight=False, markup=False)


@alerts_app.command("test")
def test_channels(
    channel: Annotated[str | None, typer.Option(help="only this channel: its name or key as `eorch alerts "
                                                "channels` shows them")] = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Send a test alert to every configured channel (or one) and report each outcome."""
    from orchestrator.alerts.engine import send_test

    deliveries = send_test(context(), only=channel)
    if json_:
        print_json([d.to_json() for d in deliveries])
    elif not deliveries:
        console.print("no alert channels configured: add `[alerts] urls = [...]` to config.toml "
                      "or set EORCH_ALERT_URLS", markup=False)
    else:
        for d in deliveries:
            console.print(f"{d.channel}: " + ("delivered" if d.ok else f"FAILED after {d.attempts} attempts: {d.error}"),
                          highlight=False, markup=False)
    if any(not d.ok for d in deliveries):
        raise typer.Exit(1)


@alerts_app.command("channels")
def list_channels(
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """The configured alert channels: name (tokens left out), the kinds each takes, and its key."""
    from orchestrator.alerts.settings import channel_infos

    infos = channel_infos(context())
    if json_:
        print_json([{"name": c.name, "key": c.key, "via": c.via, "kinds": c.kinds} for c in infos])
        return
    if not infos:
        console.print("no alert channels configured: add `[alerts] urls = [...]` to config.toml "
                      "or set EORCH_ALERT_URLS", markup=False)
        return
    table = Table("channel", "kinds", "via", "key")
    for c in infos:
        table.add_row(text(c.name), text(c.kinds_text), text(c.via), text(c.key))
    console.print(table, highlight=False)


@alerts_app.command("mute")
def mute(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
) -> None:
    """Raise no alert for this run (none recorded, rung or sent) until `eorch alerts unmute`."""
    from orchestrator.services.mutes import set_muted

    muted = set_muted(context(), run, True)
    assert muted is not None
    console.print(f"alerts of run {muted.id} ({muted.name}) muted: `eorch alerts unmute {muted.id}` turns them "
                  "back on", highlight=False, markup=False)


@alerts_app.command("unmute")
def unmute(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
) -> None:
    """Alerts for this run again, from its next change on (nothing raised while muted is sent now)."""
    from orchestrator.services import runs
    from orchestrator.services.mutes import set_muted

    ctx = context()
    found = runs.get(ctx, run)
    run_id, name = found.id, found.name
    set_muted(ctx, run_id, False)
    console.print(f"alerts of run {run_id} ({name}) on", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
