"""`eorch show`: everything known about one run, as text (pipes get it whole) or `--json`."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from orchestrator.cli.common import console, context, print_json
from orchestrator.cli.current import progress_words, refreshed
from orchestrator.core.clock import utcnow
from orchestrator.core.humanize import STATUS_STYLE, earlier_tries
from orchestrator.core.recipesteps import checklist
from orchestrator.core.runstate import shown_phase
from orchestrator.logparse.events import message_shown, name_shown
from orchestrator.services import runs


def show(
    run: Annotated[str, typer.Argument(help="run id, id prefix or name")],
    refresh: Annotated[bool, typer.Option(help="when no monitor is running and the run is active, check it on "
                                          "its host first (a few seconds at most)")] = True,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Everything known about one run."""
    ctx = context()
    run_id = runs.resolve(ctx, run)
    monitor_running = refreshed(ctx, [run_id], refresh)
    view = runs.get(ctx, run_id, monitor_running)
    steps = runs.steps(ctx, run_id)
    record = {**view.record(), "freshness": view.freshness()}
    if steps:
        record["steps"] = [{"step": x.step, "state": x.state, "seconds": x.seconds} for x in steps]
    if json_:
        print_json(record)
        return
    style = STATUS_STYLE.get(record["status"], "")
    phase = shown_phase(record["status"], record["phase"], record["kind"])
    console.print(f"[bold]{escape(record['id'])}[/] {escape(record['name'])} on {escape(record['host'])}: "
                  f"[{style}]{record['status']}[/]" + (f" · phase {escape(phase)}" if phase else "")
                  + (f" · exit {record['exit_code']}" if record["exit_code"] is not None else ""))
    if record["freshness"]["note"]:
        console.print(record["freshness"]["note"], style="yellow", highlight=False, markup=False)
    console.print(f"command: {shlex.join(record['command'])}", highlight=False, markup=False, soft_wrap=True)
    if record.get("rerun_of"):
        console.print(f"rerun of {record['rerun_of']}", highlight=False, markup=False)
    if record.get("alerts_muted_at"):
        console.print(f"alerts muted since {record['alerts_muted_at']} (`eorch alerts unmute {record['id']}`)",
                      highlight=False, markup=False)
    if record["scheduler"]:
        sched = record["scheduler"]
        state = sched.get("state") or "submitted"
        why = f" ({sched['reason']})" if sched.get("reason") else ""
        node = f" on {sched['node']}" if sched.get("node") else ""
        console.print(f"slurm job {sched['job_id']}: {state}{why}{node}", highlight=False, markup=False)
    words = progress_words(record, utcnow())
    if record["shards"]:
        console.print(" · ".join([f"shards: {record['shards']['done']}/{record['shards']['total']}", *words]),
                      highlight=False)
    elif words:
        console.print(words[-1], highlight=False)
    if record["progress"]:
        p = record["progress"]
        console.print(f"progress: {p['done']}/{p['total']}" + (f" at {p['rate']:.2f}/s" if p["rate"] else ""))
    console.print(f"started {record['started_at']} · ended {record['ended_at'] or '—'} · "
                  f"log bytes read {record['log_offset']}")
    from orchestrator.core.envlines import env_lines

    for line in env_lines(record):
        console.print(line, highlight=False)
    if record.get("preflight"):
        from orchestrator.preflight import lines

        for line in lines(record["preflight"], all_checks=False):
            console.print(line, highlight=False, soft_wrap=True)
    if steps:
        console.print(f"steps: {checklist(steps)}", highlight=False, markup=False)
    if record.get("canary"):
        console.print(canary_line(record["canary"]), highlight=False)
    warm = record.get("warm_server")
    if warm:
        console.print(f"kept server: {warm.get('state')} · client failed at {warm.get('step')}: {warm.get('error')} · "
                      f"retries {warm.get('retries')}, load time saved {warm.get('saved_load_s')}s"
                      + (f" · `eorch retry {record['id']}`" if warm.get("state") == "waiting" else ""),
                      highlight=False, markup=False)
    if record.get("outputs"):
        o = record["outputs"]
        if o.get("dir") is not None:
            console.print(f"outputs: {o.get('samples')} samples in {o.get('dir')} · verified {o.get('verified')}",
                          markup=False)
        if o.get("client_errors"):  # files may still be whole (verified above): speculators' own report
            console.print(f"warning: speculators reported {o['client_errors']} sample(s) skipped; first: "
                          f"{o.get('first_client_error')}", highlight=False, markup=False)
        gate = o.get("first_sample")
        if gate:
            checks = gate.get("checks") or {}
            what = (f"sample {gate.get('index')}: shape {checks.get('shape')} {checks.get('dtype')}, token ids match, "
                    "finite" if gate.get("verified") else f"sample {gate.get('index')}: {gate.get('error')}")
            console.print(f"first-sample gate: {'passed' if gate.get('verified') else 'FAILED'} ({what})",
                          highlight=False, markup=False)
    _print_earlier_runs(record.get("earlier_runs") or [])
    cause = record["root_cause"]
    if cause:
        # A multi-line message (a CUDA error's advice, pydantic's fields) goes on indented under its first line.
        first, *more = message_shown(cause).split("\n")
        console.print(Text.assemble(("root cause", "bold red"), f" ({cause.get('process') or '?'}): "
                                    f"{name_shown(cause)}: {first}"), highlight=False)
        for line in more:
            console.print("  " + line, highlight=False, markup=False)
        if cause.get("signature"):
            from orchestrator.logparse import signature_hint

            console.print(f"signature {cause['signature']}: {signature_hint(cause['signature']) or ''}",
                          highlight=False, markup=False)
        if cause.get("canary_step"):
            console.print(f"(in the canary: {cause.get('canary_error') or cause['canary_step']})",
                          highlight=False, markup=False)
        if cause.get("traceback"):
            console.print(cause["traceback"], highlight=False, markup=False)
    elif record.get("evidence"):
        _print_evidence(record["evidence"])


def _print_earlier_runs(earlier: list[dict[str, Any]]) -> None:
    """The runs before the last one in the job's log (it started vLLM again): the run's verdict is the last's."""
    for where, said, _ in earlier_tries(earlier):
        console.print(f"earlier: {where}: {said}", highlight=False, markup=False)


#: Lines of a failed run's log tail that `eorch show` prints (`--json` has all that are kept).
SHOWN_TAIL_LINES = 10


def _print_evidence(evidence: dict[str, Any]) -> None:
    """A failure that printed no exception: its first error line and the log's last lines."""
    console.print("[bold red]no exception in the log[/]")
    if evidence.get("first_error_line"):
        console.print("first error line: ", end="")
        console.print(evidence["first_error_line"], highlight=False, markup=False)
    tail = (evidence.get("log_tail") or [])[-SHOWN_TAIL_LINES:]
    if tail:
        console.print(f"last {len(tail)} lines of the log:")
        for line in tail:
            console.print("  " + line, highlight=False, markup=False)
    else:
        console.print("the log is empty")


def canary_line(c: dict[str, object]) -> str:
    """``canary: succeeded in 41.2s (LlamaForCausalLM, 4 of 32 layers, ids [2, 16, 29, 32] → [1, 2, 3, 4])``."""
    took = f" in {c['seconds']:.1f}s" if isinstance(c.get("seconds"), int | float) else ""
    model = c.get("model")
    if not isinstance(model, dict):
        model = None
    what = (f" ({model['architecture']}, {model['num_hidden_layers']} of {model['target_layers']} layers, "
            f"ids {model['target_layer_ids']} → {model['layer_ids']})") if model else ""
    status = c.get("status")
    style = {"succeeded": "green", "failed": "bold red"}.get(str(status), "yellow")
    line = f"canary: [{style}]{status}[/]{took}{what}"
    if status == "failed":
        line += f" at {c.get('step')}: the full run was not started"
    return line
