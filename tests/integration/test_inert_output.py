"""A job's output and a user's strings cannot act on the terminal: every surface prints them inert.

The job runs on the loopback sshd (`testbox`) and writes what a hostile request text could put in a vLLM
log: OSC 52 (set the clipboard), OSC 2 (the window title), ESC c (reset), ESC #8, ESC (0, a C1 CSI.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

from helpers import add_testbox, eorch, launch, show

# Any C0 control but tab and newline, DEL, any C1 control: what a terminal acts on.
TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = ("\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07\x1b]2;pwned\x07\x1bc\x1b#8\x1b(0\x9b2J\x9d0;t\x9c"
           "\x1b[31mred\x1b[0m")
JOB = (
    "import sys\n"
    f"sys.stdout.buffer.write(('before ' + {HOSTILE!r} + ' after\\n').encode())\n"
    "print('[alerts] [bold]kept[/bold]', flush=True)\n"
    f"raise RuntimeError('bad input ' + {HOSTILE!r} + ' end')\n"
)


def assert_inert(out: str, what: str) -> None:
    found = TERMINAL_CONTROL.search(out)
    assert found is None, f"{what} printed {found.group()!r}: {out!r}"


class TestJobOutputIsInert:
    def test_logs_show_watch_and_analyze_print_no_terminal_controls(self, eorch_home: Path, tmp_path: Path) -> None:
        """`logs`, `watch`, `show` and `log analyze` keep the text and drop every sequence; `--raw` keeps the bytes."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", JOB)
        watched = eorch("watch", run["id"], "--until-done", check=False)
        assert watched.returncode == 1
        assert_inert(watched.stdout + watched.stderr, "watch")

        logs = eorch("logs", run["id"])
        assert_inert(logs.stdout, "logs")
        assert "before red after" in logs.stdout and "RuntimeError: bad input red end" in logs.stdout
        assert "[alerts] [bold]kept[/bold]" in logs.stdout  # brackets are data here too

        raw = eorch("logs", run["id"], "--raw").stdout
        assert f"before {HOSTILE} after" in raw

        record = show(run["id"])
        assert record["status"] == "failed"
        assert record["root_cause"]["message"] == "bad input red end"
        shown = eorch("show", run["id"])
        assert_inert(shown.stdout, "show")
        assert "RuntimeError: bad input red end" in shown.stdout

        log_file = tmp_path / "job.log"
        log_file.write_text(raw)
        analyzed = eorch("log", "analyze", str(log_file))
        assert_inert(analyzed.stdout, "log analyze")
        assert "bad input red end" in analyzed.stdout


class TestRunNames:
    def test_launch_refuses_a_name_with_escape_sequences(self, eorch_home: Path, tmp_path: Path) -> None:
        """A name that would retitle the terminal is refused in one line, before anything starts."""
        add_testbox(tmp_path)
        proc = eorch("launch", "--host", "gpu", "--name", "x\x1b]2;pwned\x07", "--", "true", check=False)
        assert proc.returncode == 2 and "run name has control characters" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert eorch("runs", "--json").stdout.strip() == "[]"

    def test_a_recorded_hostile_name_is_printed_inert(self, eorch_home: Path, tmp_path: Path) -> None:
        """A name already in the history (an older eorch let it in) is inert in `runs` and `show`."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", "raise SystemExit(3)", extra=("--name", "plain"))
        eorch("watch", run["id"], "--until-done", check=False)
        with sqlite3.connect(eorch_home / "eorch.db") as conn:
            conn.execute("update runs set name = ? where id = ?", ("na\x1b]2;pwned\x07me\x1bc", run["id"]))
        for args in (("runs",), ("show", run["id"])):
            out = eorch(*args).stdout
            assert_inert(out, " ".join(args))
            assert run["id"] in out


class TestTerminalNotification:
    def test_bell_title_cannot_end_its_osc_early(self) -> None:
        """The OSC 9 notification eorch writes on a (real pseudo-)terminal carries the alert title inert: a C1 ST
        or ESC in a run's name cannot close it and start a sequence of its own."""
        import os

        from orchestrator.alerts.engine import ring_bell
        from orchestrator.alerts.rules import AlertKind, AlertToRaise

        master, slave = os.openpty()
        try:
            with os.fdopen(slave, "w", closefd=False) as out:
                ring_bell(AlertToRaise(AlertKind.FAILED, "k", "run x\x9c\x1b]52;c;eA==\x07 failed", "body"), out)
            written = os.read(master, 4096).decode()
        finally:
            os.close(master)
            os.close(slave)
        assert written == "\a\x1b]9;run x failed\x07"
