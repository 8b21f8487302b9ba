"""`eorch log analyze FILE... [--json]`: the offline verdict on vLLM job logs."""

from __future__ import annotations

import codecs
import io
import os
import re
import sys
import textwrap
from itertools import groupby
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from orchestrator.cli.common import console, err_console, exit_status_if_pipe_closes, print_json
from orchestrator.core.humanize import tries_where
from orchestrator.errors import NotFound, UsageError
from orchestrator.logparse import (
    Analysis,
    Phase,
    Severity,
    analyze_bytes,
    analyze_path,
    analyze_stream,
    load_catalogue,
    native,
    signature_hint,
    with_exit_code,
)
from orchestrator.logparse.analyze import compression
from orchestrator.logparse.events import message_shown, says_cut
from orchestrator.paths import cache_dir

#: The file name that means standard input (a pipe: ``kubectl logs POD | eorch log analyze -``).
STDIN = "-"


#: ``log analyze --check``'s exit status when a log failed (1 and 2 say eorch itself failed or was misused).
CHECK_FAILED = 3


#: What is read of a file to tell whether it holds a log at all.
_HEAD = 64 * 1024
#: Bytes no text log holds (NUL aside: a file rotated with copytruncate starts with a run of them).
_CONTROL = re.compile(rb"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def not_a_log(head: bytes, whole: bool) -> str | None:
    """What makes a file's first bytes (all of it: ``whole``) no log to analyse, or None: nothing in it, only
    blank lines, or binary data (an executable, an image, a core dump) rather than text."""
    if not head:
        return "empty file: there is no log to analyse"
    if compression(head) is not None or head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    if whole and not head.strip():
        return "only blank lines: there is no log to analyse"
    text = head.replace(b"\0", b"")
    if not text:
        return None
    odd = len(_CONTROL.findall(text)) + text.decode("utf-8", "replace").count("\ufffd")
    return "binary data, not a text log (give the log file itself)" if odd > len(text) // 4 else None


def _check_readable(files: list[Path]) -> None:
    if sum(str(path) == STDIN for path in files) > 1:
        raise UsageError("`-` (standard input) can be given once")
    for path in files:
        if str(path) == STDIN:
            continue
        try:
            with open(path, "rb") as fh:
                head = fh.read(_HEAD)
                problem = not_a_log(head, not fh.read(1))
        except FileNotFoundError:
            raise NotFound(f"{path}: no such file") from None
        except IsADirectoryError:
            raise UsageError(f"{path}: is a directory, not a log file") from None
        except OSError as err:
            raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None
        if problem is not None:
            raise UsageError(f"{path}: {problem}")


def _analyze(path: Path, notes: list[str]) -> Analysis:
    try:
        if str(path) != STDIN:
            return analyze_path(path, notes=notes)
        stdin = sys.stdin.buffer
        # A paste at a terminal: read what each line brings, up to the first Ctrl-D (a buffered read waits for two).
        if sys.stdin.isatty() and isinstance(stdin, io.BufferedReader):
            err_console.print("reading the log from standard input: paste it, then Ctrl-D", highlight=False)
            return analyze_bytes(b"".join(iter(lambda: stdin.read1(1 << 16), b"")), notes)
        return analyze_stream(stdin, notes=notes)
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None


def _verdict(a: Analysis, exit_code: int | None) -> tuple[str, str]:
    """The verdict (markup), and what qualifies it (text)."""
    if a.failed:
        return "[bold red]FAILED[/]", ""
    if a.phase.is_terminal():
        return "[green]not failed[/]", ""
    if exit_code == 0:
        return "[green]not failed[/]", "(exit status 0, no error in the log)"
    stop = _signalled(a)
    if stop is not None:  # (a stop the log ends with, not a clean end: the phase says how far it got)
        return "[green]not failed[/]", f"(stopped from outside: a stop signal at line {stop}, no error before it)"
    return "[green]not failed so far[/]", "(the log does not show the job ending)"


def _signalled(a: Analysis) -> int | None:
    """The line where a signal handler reported a stop signal, when the log shows no error (a job stopped)."""
    if a.failed or a.root_cause is not None:
        return None
    return next((s.first_line for s in a.signatures if s.id == "stop_signal_received"), None)


def _unended(a: Analysis, exit_code: int | None) -> str | None:
    """What a log that stops before it serves, with no error and no exit status, can mean (a pasted log has
    none)."""
    if a.failed or a.phase.rank >= Phase.SERVING.rank or a.root_cause is not None or exit_code is not None:
        return None
    if _signalled(a) is not None:
        return None
    if a.phase is Phase.STARTING:  # (nothing read as loading: a start-up, or a log of something else)
        return ("the log stops with no error, before anything eorch reads as loading or serving: the job is still "
                "starting, was killed without a word (SIGKILL: the OOM killer?), or ended in a way eorch does not "
                "know; give --exit-code N once it has ended")
    return (f"the log stops during start-up ({a.phase.value}) with no error: the job is still starting, or "
            "it was killed without a word (SIGKILL: the OOM killer?); give --exit-code N once it has ended")


#: Where the values of the summary's labelled lines start.
_PAD = " " * 14


#: Narrowest text column wrapped on a terminal (a narrower terminal gets whole lines, as a pipe does).
_NARROWEST = 20


def _field(label: str, text: str) -> None:
    """``text`` (not markup) in the column after ``label``: every line of it indented, so that a multi-line
    message stays in its column, and on a terminal wrapped at its width under the same column (a pipe or a
    file gets whole lines, to grep and to paste)."""
    width = console.width - len(_PAD) if console.is_terminal else 0
    rows: list[str] = []
    for line in text.split("\n"):
        if width < _NARROWEST or len(line) <= width:
            rows.append(line)
        else:
            rows += textwrap.wrap(line, width, break_on_hyphens=False, replace_whitespace=False) or [""]
    first = f"  {label:<12}" if label else _PAD
    shown = "\n".join([first + rows[0], *(_PAD + row for row in rows[1:])])
    console.print(escape(shown), highlight=False, soft_wrap=True)


def _earlier(e: Analysis) -> str:
    """How one earlier run of the log ended, in a line (without where its cause is)."""
    rc = e.root_cause
    verdict = "FAILED" if e.failed else ("stopped" if e.phase.is_terminal() else f"ended while {e.phase.value}")
    if rc is None:
        return verdict
    said = message_shown(rc.to_dict())
    what = f"{rc.exception}: {said}" if rc.exception else said
    return f"{verdict}: {what.splitlines()[0]}"


def _earlier_lines(a: Analysis) -> list[str]:
    """The earlier runs of the log, a line each, numbered as in the whole log; runs in a row that ended alike
    are one line (a restart policy's crash loop), with where the first one's cause is."""
    out = []
    for said, same in groupby(a.earlier, key=_earlier):
        run = list(same)
        first, last = run[0], run[-1]
        where = tries_where(first.try_no, last.try_no, a.try_no, first.first_line, last.lines)
        cause = "" if first.root_cause is None else f" (line {first.root_cause.line_no}"
        out.append(f"{where}: {said}" + (cause and cause + (")" if len(run) == 1 else ", in the first)")))
    return out


def _latest_lines(a: Analysis) -> str:
    """Where the last try of a log of several is: after the earlier ones, or above them in a log read newest line
    first."""
    if a.first_line > max(e.lines for e in a.earlier):
        return f"lines {a.first_line}-{a.lines}"
    return f"lines {a.first_line}-{min(e.first_line for e in a.earlier) - 1}"


def _summary(name: str, a: Analysis, notes: list[str], exit_code: int | None = None) -> None:
    head, size = f"[bold]{escape(name)}[/]", f"{a.lines} lines, {a.bytes} bytes"
    if console.is_terminal and Text.from_markup(head).cell_len + 2 + len(size) > console.width:
        console.print(head, highlight=False, soft_wrap=True)  # (a long path: the size under it, whole)
        console.print(f"{_PAD}{size}", highlight=False)
    else:
        console.print(f"{head}  {size}", highlight=False)
    cause_at = None if a.root_cause is None else a.root_cause.line_no
    looped = cause_at is not None and any(e.first_line <= cause_at <= e.lines for e in a.earlier)
    if looped:  # the verdict is an earlier try's cause (``runs.crash_loop``)
        _field("runs", f"{a.try_no} tries in this log: the last ones failed the same way and the last "
                       f"({_latest_lines(a)}) is starting again, a crash loop; the verdict is their failure")
    elif a.earlier:
        console.print(f"  runs        {a.try_no} tries in this log; the verdict is the last one's "
                      f"({_latest_lines(a)})", highlight=False)
    for note in notes:
        _field("note", note)
    verdict, qualified = _verdict(a, exit_code)
    line = f"  phase       {a.phase.value}    verdict: {verdict}"
    if qualified and console.is_terminal and Text.from_markup(line).cell_len + 1 + len(qualified) > console.width:
        console.print(line, highlight=False)
        _field("", qualified)  # under the values, not at the terminal's first column
    else:
        console.print(f"{line} {qualified}".rstrip(), highlight=False)
    unended = _unended(a, exit_code)
    if unended:
        _field("ended?", unended)
    if a.failed and a.root_cause is None:  # failed by its exit status alone (``--exit-code``)
        _field("why?", "its exit status; the log names no cause (the error may have gone to another file, or the "
                       "job exited on purpose): its last lines may say more")
    if a.shards is not None:
        s = a.shards
        pct = f" ({100 * s.done // s.total}%)" if s.total else ""
        extra = ""
        if s.rate_per_s:
            extra += f", {1 / s.rate_per_s:.1f} s/shard" if s.rate_per_s < 1 else f", {s.rate_per_s:.3g} shards/s"
        if s.eta_s is not None and s.done < s.total:
            extra += f", ETA {s.eta_s:.0f} s"
        console.print(f"  shards      {s.done}/{s.total}{pct}{extra}")
    if a.weights_load_s is not None:
        console.print(f"  weights     loaded in {a.weights_load_s:.2f} s")
    if a.progress is not None:
        console.print(f"  progress    {a.progress.done}/{a.progress.total} {escape(a.progress.unit)}")
    rc = a.root_cause
    if rc is not None:
        # What the cause is: its exception; with none, the known failure its line shows (a signature), else what
        # kind of evidence it is.
        cut = says_cut(rc.message)
        named = rc.exception or (rc.signature if rc.process and (rc.traceback is None or not cut) else None)
        what = escape(named or ("exit status" if rc.traceback is None and rc.process is None
                                else "traceback" if rc.traceback and cut
                                else "error line"))
        where = f" in {escape(rc.process)}" if rc.process else ""
        sig = "  " + escape(f"[{rc.signature}]") if rc.signature and rc.signature != named else ""
        at = "" if what == "exit status" else f" (line {rc.line_no})"  # (a status is no line of the log)
        console.print(f"  root cause  [bold]{what}[/]{where}{at}{sig}", highlight=False)
        _field("", message_shown(rc.to_dict()))
        if not a.failed:
            _field("", "(an error line is not a failure by itself; if the process died after it, this was the "
                       "cause: nothing after it shows the job going on)")
        hint = rc.hint or (signature_hint(rc.signature) if rc.signature else None)
        if hint:
            _field("hint", hint)
    first = a.first_error
    if a.errors and first is not None and (rc is None or rc.line_no != first.line_no):
        where = f" in {first.process}" if first.process else ""
        text = f"{first.exception}: {first.message}" if first.exception else first.message or "(empty)"
        # An error line a signature explains is shown as that signature: when one came first, say so.
        which = ("first" if a.first_error_at in (None, first.line_no)
                 else f"first at line {a.first_error_at}, the first of no known kind")
        _field("errors", f"{a.errors} error line(s), {which} at line {first.line_no}{where}: {text}")
    if a.earlier and a.earlier[0].try_no > 1:
        _field("earlier", f"tries 1-{a.earlier[0].try_no - 1} are not listed (the last {len(a.earlier)} before "
                          f"the verdict's are)")
    for line in _earlier_lines(a):
        _field("earlier", line)
    if a.signatures:
        _field("signatures", ", ".join(f"{s.id} x{s.count} (line {s.first_line})" for s in a.signatures))
    catalogue = load_catalogue()
    for count in a.signatures:
        known = catalogue.by_id(count.id)
        if known is not None and known.severity is Severity.WARNING:
            _field("warning", f"{known.id}: {known.hint}")
    if rc is not None and rc.traceback:
        console.print("  traceback:")
        for line in rc.traceback.splitlines():
            console.print(f"    {escape(line)}", highlight=False, soft_wrap=True)
    console.print()


def analyze(
    files: Annotated[list[Path], typer.Argument(help="log files to read; - reads standard input",
                                                show_default=False)],
    json_: Annotated[bool, typer.Option("--json", help="print a JSON array, one object per file")] = False,
    exit_code: Annotated[int | None, typer.Option(
        "--exit-code", help="the job's exit status, when known (137 or -9: killed by SIGKILL)",
        show_default=False)] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="exit with status 3 when a log's verdict is FAILED (1 and 2 are eorch's own errors)")] = False,
) -> None:
    """Read whole log files (plain, gzip, bzip2 or xz) and say how far each job got, whether it failed, and
    why."""
    if exit_code is not None and not -64 <= exit_code <= 255:
        raise UsageError(f"--exit-code {exit_code}: an exit status is 0 to 255 (128+N: killed by signal N), or -1 "
                         "to -64 (Python's -N for signal N)")
    _check_readable(files)
    native.keep_compiled_in(cache_dir(os.environ) / "hyperscan")  # this process exits after one parse
    results = []
    for path in files:
        notes: list[str] = []
        a = _analyze(path, notes)
        if str(path) == STDIN and not a.bytes:
            raise UsageError("standard input was empty: there is no log to analyse")
        results.append((str(path), with_exit_code(a, exit_code), notes))
    failed = check and any(a.failed for _, a, _ in results)
    if check:
        exit_status_if_pipe_closes(CHECK_FAILED if failed else 0)
    if json_:
        print_json([{**a.to_json(file=name), "notes": notes} for name, a, notes in results])
    else:
        for name, a, notes in results:
            _summary("(standard input)" if name == STDIN else name, a, notes, exit_code)
    if failed:
        raise typer.Exit(CHECK_FAILED)


def register(app: typer.Typer) -> None:
    log_app = typer.Typer(name="log", help="Understand job logs offline.", no_args_is_help=True)
    log_app.command()(analyze)
    app.add_typer(log_app, name="log")
