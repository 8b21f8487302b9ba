"""The forms a log reaches a user in, other than the file vLLM wrote: line endings normalised by a copy-paste,
each line prefixed by a log collector, hard-wrapped by a terminal.  One definition for the tests and for
``bench/verdict_score.py --transforms`` (which puts ``tests/`` on its path)."""

from __future__ import annotations

import re

#: What a log collector puts in front of every line.
COLLECTORS = {
    "kubectl --timestamps": b"2026-03-11T17:57:09.855212259Z ",
    "kubectl --prefix": b"[pod/vllm-7d9f8c-x2x4q/vllm] ",
    "docker compose": b"vllm-openai-1  | ",
    "docker compose -t": b"vllm-openai-1  | 2026-12-01T09:00:00.123456789Z ",
    "journalctl": b"Dec 01 09:00:00 gpu1 vllm[4242]: ",
    "journalctl short-iso": b"2026-12-01T09:00:00+0000 gpu1 vllm[4242]: ",
    "srun --label": b"0: ",
}

#: Two collectors, one through the other, Loki's, a supervisor's and mpirun's: what ``eorch log analyze`` reads as well as the ones above
#: (not in ``bench/verdict_score.py --transforms``, whose figures stay comparable from session to session).
STACKED = {
    "kubectl --prefix --timestamps": b"[pod/vllm-7d9f8c-x2x4q/vllm] 2026-03-11T17:57:09.855212259Z ",
    "ts over journalctl": b"2026-12-01 09:00:00.123 Dec 01 09:00:00 gpu1 vllm[4242]: ",
    "ts over kubectl --timestamps": b"2026-03-11 17:57:10 2026-03-11T17:57:09.855212259Z ",
    "srun --label in the journal": b"Dec 01 09:00:00 gpu1 slurmstepd[4242]: 0: ",
    "loki logcli": b'2026-03-11T17:57:09Z {container="vllm", pod="vllm-0"} ',
    "a supervisor (lemonade)": b"2026-05-08 11:47:02.257 [Info] (Process) ",
    "srun --label over a job's own stamps": b"0: [2025-06-28T09:19:58Z] ",
    "mpirun --tag-output": b"[1,0]<stdout>:",
    "mpirun --tag-output --timestamp-output": b"Thu Jan 23 11:55:50 2025[1,1]<stderr>:",
}


def plain(data: bytes) -> bytes:
    """The log after a copy-paste, ``kubectl logs`` or ``dos2unix``: every line ends in a bare ``\\n``."""
    return re.sub(rb"\r\n?", b"\n", data)


def prefixed(data: bytes, prefix: bytes) -> bytes:
    """The log as a collector writes it: ``plain``, each line after ``prefix``."""
    return b"".join(prefix + line for line in plain(data).splitlines(keepends=True))


def hard_wrapped(data: bytes, width: int) -> bytes:
    """The log as a terminal's copy gives it: ``plain``, every line cut into rows of ``width`` bytes."""
    rows: list[bytes] = []
    for line in plain(data).split(b"\n"):
        while len(line) > width:
            rows.append(line[:width])
            line = line[width:]
        rows.append(line)
    return b"\n".join(rows)


def flattened(data: bytes) -> bytes:
    """The log copied from a page that rendered it as text (Markdown without a code block, a chat message):
    ``plain``, every run of blanks one space, no blank at a line's start or end (a traceback's indentation
    is gone)."""
    return b"\n".join(re.sub(rb"[ \t]+", b" ", line).strip() for line in plain(data).split(b"\n"))


def cr_to_newline(data: bytes) -> bytes:
    """The log after ``tr '\\r' '\\n'`` (to make tqdm's bars readable): each ``\\r\\n`` two line ends."""
    return data.replace(b"\r", b"\n")


def double_spaced(data: bytes) -> bytes:
    """The log with an empty line after every line (some web pages and chat clients give it so)."""
    return b"".join(line + b"\n" for line in plain(data).splitlines(keepends=True))


def escapes_shown(data: bytes, spelling: bytes) -> bytes:
    """The log as ``less`` (``spelling`` ``ESC``) or ``cat -v`` (``^[``) shows it: every escape byte written out."""
    return data.replace(b"\x1b", spelling)


def cat_v(data: bytes) -> bytes:
    """The log as ``cat -v`` shows it: escape bytes written ``^[``, carriage returns ``^M``."""
    return data.replace(b"\x1b", b"^[").replace(b"\r", b"^M")


def _numbered(data: bytes, form: bytes) -> bytes:
    return b"".join(form % n + line for n, line in enumerate(plain(data).splitlines(keepends=True), 1))


#: What a paste puts around a log (``logparse/gutter.py``): a reply's quote markers, a tool's line numbers,
#: pm2's app column, Markdown's code fences.
PASTES = {
    "quoted": lambda d: b"".join(b">" + (b" " + ln if ln.strip() else b"\n")
                                 for ln in plain(d).splitlines(keepends=True)),
    "cat -n": lambda d: _numbered(d, b"%6d\t"),
    "grep -n": lambda d: _numbered(d, b"%d:"),
    "pm2": lambda d: prefixed(d, b"0|vllm-server  | "),
    "fenced": lambda d: b"```text\n" + plain(d).rstrip(b"\n") + b"\n```\n",
}


def csv_exported(data: bytes) -> bytes:
    """Each line a CSV field (a log viewer's CSV download): in double quotes, a quote inside doubled."""
    lines = data.split(b"\n")
    rest = lines.pop()
    quoted = [b'"' + line.replace(b'"', b'""') + b'"\n' for line in lines]
    return b"".join(quoted) + (b'"' + rest.replace(b'"', b'""') + b'"' if rest else b"")
