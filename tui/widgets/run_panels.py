"""The parts of the run detail: header, shard progress with rate and ETA, phase timeline, root cause."""

from __future__ import annotations

import shlex
from datetime import datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from orchestrator.core.envlines import env_lines
from orchestrator.core.freshness import last_output_text
from orchestrator.core.humanize import earlier_tries, span, tries_in_log
from orchestrator.logparse.events import message_shown
from orchestrator.preflight import lines as preflight_lines
from tui.data import RunDetail, SimilarRun
from tui.format import progress_of, rate_text, slurm_text, stamp, status_text


def header_text(detail: RunDetail) -> Text:
    row = detail.row
    text = Text.assemble((row.id, "bold"), "  ", (row.name, "bold"), f"  on {row.host} · ",
                         status_text(row.status), f" · phase {row.phase}" if row.phase else "")
    if row.exit_code is not None:
        text.append(f" · exit {row.exit_code}")
    if detail.cancel_requested and not row.terminal:
        text.append(" · cancelling", style="yellow")
    if row.stale_note:
        text.append(f"\n{row.stale_note}", style="yellow")
    if detail.earlier_runs:
        tries, failed = tries_in_log(detail.earlier_runs), sum(1 for e in detail.earlier_runs if e.get("failed"))
        listed = len(detail.earlier_runs)
        before = f"{failed} before it failed" if listed == tries - 1 else f"{failed} of the last {listed} before it failed"
        text.append(f"\ntry {tries} of {tries} in its log: {before} (the cause tab lists them)",
                    style="yellow" if failed else "dim")
    slurm = slurm_text(row)
    if slurm is not None:
        text.append("\n")
        text.append_text(slurm)
    text.append("\n$ " + shlex.join(detail.command), style="dim")
    text.append(f"\nstarted {stamp(row.started_at or row.created_at)} · ended {stamp(row.ended_at)}")
    for line in env_lines({"env_fingerprint": detail.env_fingerprint, "patch_set": detail.patch_set}):
        text.append("\n")
        text.append_text(Text.from_markup(line, style="dim"))
    if detail.preflight:
        for line in preflight_lines(detail.preflight, all_checks=False):
            text.append("\n")
            text.append_text(Text.from_markup(line, style="dim"))
    return text


def timeline_text(detail: RunDetail) -> Text:
    text = Text()
    for index, step in enumerate(detail.timeline):
        if index:
            text.append(" → ", style="dim")
        if step.label == "end":
            text.append("end ", style="bold")
            text.append_text(status_text(step.detail or detail.row.status))
            continue
        ongoing = step.duration_s is None
        text.append(step.label, style="bold cyan" if ongoing else "bold")
        text.append(f" {span(step.duration_s)}" if not ongoing else " …", style="dim")
        if step.detail:
            text.append(f" ({step.detail})", style="red")
    recipe = recipe_text(detail)
    if recipe.plain:
        text.append("\n")
        text.append_text(recipe)
    return text


STEP_STYLE = {"done": "green", "failed": "bold red", "started": "bold cyan", "skipped": "dim"}


def recipe_text(detail: RunDetail) -> Text:
    """The recipe's verdict: its steps as a checklist with times, then its outputs."""
    text = Text()
    for index, line in enumerate(detail.steps):
        if index:
            text.append("  ")
        text.append(line.text(), style=STEP_STYLE.get(line.state, ""))
    out = detail.outputs
    if out:
        if text.plain:
            text.append("\n")
        verified = out.get("verified")
        text.append(f"outputs: {out.get('samples')} samples · ")
        text.append("verified" if verified else "not verified", style="green" if verified else "yellow")
        size = out.get("bytes")
        text.append((f" · {size / 2**20:.1f} MiB" if isinstance(size, int | float) else "")
                    + f" · {out.get('dir')}", style="dim")
    return text


class ShardProgress(Horizontal):
    """Shards loaded (or items processed) as a bar, with rate and ETA from the history."""

    def compose(self) -> ComposeResult:
        yield Static("progress", id="progress-label")
        yield ProgressBar(total=None, show_eta=False, show_percentage=True, id="progress-bar")
        yield Static("", id="progress-text")

    def show(self, detail: RunDetail, now: datetime | None = None) -> None:
        progress = progress_of(detail.row, now)
        self.display = progress is not None
        if progress is None:
            return
        done, total, rate, eta, unit = progress
        self.query_one("#progress-label", Static).update(unit)
        self.query_one(ProgressBar).update(total=total, progress=done)
        parts = [f"{done}/{total}", rate_text(rate, unit)]
        if eta is not None and not detail.row.terminal and done < total:
            parts.append(f"ETA {span(eta)}" if eta >= 0 else f"overdue {span(-eta)}")
        if now is not None and not detail.row.terminal:
            parts.append(last_output_text(detail.row.last_output_at, now))
        self.query_one("#progress-text", Static).update(Text(" · ".join(p for p in parts if p)))


class RootCausePanel(VerticalScroll):
    """Exception, message, hint, the full traceback, and the earlier runs that failed the same way (Enter on
    one opens it; each says what changed since)."""

    _similar_shown: tuple[SimilarRun, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("", id="cause-text")
        yield Static("", id="similar-title")
        yield OptionList(id="similar-runs")

    def show(self, detail: RunDetail) -> None:
        self.query_one("#cause-text", Static).update(cause_text(detail))
        title = self.query_one("#similar-title", Static)
        options = self.query_one("#similar-runs", OptionList)
        title.display = options.display = bool(detail.similar)
        title.update(Text("\nseen before (Enter opens the run; what changed since):", style="bold"))
        if detail.similar != self._similar_shown:  # a refresh must not move the user's highlight
            self._similar_shown = detail.similar
            options.clear_options()
            options.add_options(Option(similar_text(r), id=r.id) for r in detail.similar)

    @on(OptionList.OptionSelected, "#similar-runs")
    def _open_similar(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.app.open_run(event.option.id)  # type: ignore[attr-defined]


def similar_text(run: SimilarRun) -> Text:
    text = Text.assemble((run.id, "bold"), f" {run.name} · ", status_text(run.status), f" · {stamp(run.created_at)}")
    if run.changed:
        text.append(f"\n  changed since: {run.changed}", style="dim")
    return text


def evidence_text(detail: RunDetail) -> Text:
    """A failure without an exception: its first error line and the log's last lines."""
    text = Text(f"The run {detail.row.status} and its log shows no exception.", style="yellow")
    evidence = detail.evidence or {}
    if evidence.get("first_error_line"):
        text.append("\nfirst error line: ", style="bold")
        text.append(str(evidence["first_error_line"]), style="red")
    tail = evidence.get("log_tail") or []
    text.append(f"\n\nlast {len(tail)} lines of the log:\n" if tail else "\n\nthe log is empty", style="bold")
    text.append("\n".join(str(line) for line in tail))
    return text


def earlier_text(detail: RunDetail) -> Text:
    """The tries before the last in the job's log, a line each (empty when there is one)."""
    text = Text()
    earlier = detail.earlier_runs
    for where, said, failed in earlier_tries(earlier):
        text.append(f"\n{where}: ", style="bold")
        text.append(said, style="red" if failed else "")
    return text


def cause_text(detail: RunDetail) -> Text:
    cause = detail.root_cause
    if not cause:
        if detail.row.status in ("failed", "lost"):
            return evidence_text(detail).append_text(earlier_text(detail))
        if detail.earlier_runs:
            return Text("No root cause in the last try; the run is judged by it.", style="dim").append_text(
                earlier_text(detail))
        return Text("No root cause: nothing has failed.", style="dim")
    text = Text()
    text.append(str(cause.get("exception") or "error"), style="bold red")
    text.append(": " + message_shown(cause))
    where = [f"process {cause['process']}" if cause.get("process") else "",
             f"signature {cause['signature']}" if cause.get("signature") else "",
             f"log line {cause['line_no']}" if cause.get("line_no") else ""]
    if any(where):
        text.append("\n" + " · ".join(w for w in where if w), style="dim")
    if detail.hint:
        text.append("\nhint: ", style="bold green")
        text.append(detail.hint)
    if detail.similar:
        text.append("\nseen before in runs ", style="bold")
        text.append(", ".join(f"{r.id} ({r.name}, {r.status}, {stamp(r.created_at)})" for r in detail.similar))
    text.append_text(earlier_text(detail))
    if cause.get("traceback"):
        text.append("\n\n")
        text.append(str(cause["traceback"]), style="red")
    return text
