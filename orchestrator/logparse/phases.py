"""Phases of a vLLM job and the lines that move it forward; shard and user progress readings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Final

from orchestrator.logparse.lines import LINE_CAP
from orchestrator.logparse.memo import Memo


class Phase(str, Enum):
    """Where a job is, as read from its log.  Ordered: a log only moves forward."""

    STARTING = "starting"
    LOADING = "loading"
    LOADED = "loaded"  # includes profiling, KV-cache sizing and CUDA-graph capture
    SERVING = "serving"
    RUNNING = "running"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def is_terminal(self) -> bool:
        return self in (Phase.STOPPED, Phase.FAILED)


_RANK: dict[Phase, int] = {p: i for i, p in enumerate(Phase)}


@dataclass(frozen=True)
class Marker:
    """A line that moves the phase to ``phase`` (never backwards)."""

    phase: Phase
    needles: tuple[str, ...]
    pattern: re.Pattern[str]


def _m(phase: Phase, needles: tuple[str, ...], pattern: str) -> Marker:
    return Marker(phase, needles, re.compile(pattern))


# Order matters only for readability; every marker is tried on an examined line.
MARKERS: tuple[Marker, ...] = (
    _m(Phase.LOADING, ("Starting to load model",), r"Starting to load model"),
    _m(Phase.LOADED, ("Loading weights took",), r"Loading weights took [\d.]+ ?s"),
    _m(Phase.LOADED, ("Model loading took",), r"Model loading took [\d.]+ ?GiB"),
    _m(Phase.LOADED, ("Memory profiling takes", "Available KV cache memory", "KV cache size"),
       r"Memory profiling takes|Available KV cache memory|KV cache size: [\d,]+ tokens"),
    _m(Phase.LOADED, ("Capturing CUDA graphs", "Graph capturing finished"),
       r"Capturing CUDA graphs|Graph capturing finished"),
    _m(Phase.SERVING, ("init engine",), r"init engine \(profile, create kv cache, warmup model\) took"),
    _m(Phase.SERVING, ("Starting vLLM",), r"Starting vLLM (?:API )?server"),
    _m(Phase.SERVING, ("Application startup complete",), r"Application startup complete"),
    _m(Phase.SERVING, ("ready to roll",), r"The server is fired up and ready to roll"),  # (SGLang's)
    # (a log whose start-up is cut off: a health check answered, vLLM's request logger taking a request)
    _m(Phase.SERVING, ('"GET /health',), r'"GET /health HTTP/[\d.]+" (?P<status>2\d\d)'),
    _m(Phase.SERVING, ("Received request ", "Added request ", "Aborted request "),
       r"Received request \S+: (?:prompt|params)|(?:Added|(?P<teardown>Aborted)) request \S+\.$"),
    _m(Phase.RUNNING, ('"POST /',), r'"POST /\S+ HTTP/[\d.]+" (?P<status>\d{3})'),
    # (the engine's periodic stats, also as a paste that elided their first fields: ``Engine 000: ..., GPU KV
    # cache usage: 4.7%``)
    _m(Phase.RUNNING, ("Avg prompt throughput", "GPU KV cache usage"),
       r"Avg prompt throughput: [\d.]+ tokens/s|GPU KV cache usage: [\d.]+%"),
    _m(Phase.RUNNING, ("Processing ",), r"^Processing \d+ samples"),
)


#: A request answered with a 2xx (a health check: the engine answered it): the server is alive after what came
#: before (``Evidence.served``).
ANSWERED_NEEDLES: tuple[str, ...] = ('"GET /health', '"POST /')
ANSWERED_RE = re.compile(r'"(?:GET /health|POST /\S+) HTTP/[\d.]+" 2\d\d\b')


def shows_life(match: re.Match[str]) -> bool:
    """Whether a marker's match shows the job going on: any marker, except a request answered with a 5xx or
    aborted (an engine that died aborts every request it had)."""
    said = match.groupdict()
    status = said.get("status")
    return (status is None or int(status) < 500) and said.get("teardown") is None


# A clean end: vLLM's orderly shutdown, uvicorn stopping, a script saying it finished, SGLang's server draining on
# a SIGTERM, or Slurm cancelling the job or step (``scancel``, the job script ending a server step; not its time
# limit nor a node failure).  The executor's ``[shutdown] Executor: ...`` alone is not one: it also tears down the
# workers of a failed start; nor is the process manager's ``send sigterm to process EngineCore`` (the API server
# ending its engine after the engine's start failed), nor the client's word that its engine core exited.
_SLURM_CANCEL = r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ (?:DUE TO PREEMPTION )?\*\*\*"
_SGLANG_SIGTERM = r"SIGTERM received\. .*Draining requests and shutting down"
CLEAN_NEEDLES: tuple[str, ...] = ("[shutdown]", "Shutting down", "Application shutdown complete", "Done.",
                                  "Data generation complete!", "CANCELLED AT", "Draining requests")
CLEAN_RE = re.compile(
    r"^\[shutdown\](?! Executor:| Process manager: send sigterm| MPClient: engine core exited)"
    r"|^(?:INFO:\s+)?Shutting down\.?$|Application shutdown complete|^\s*Done\.\s*$"
    r"|Data generation complete!|" + _SLURM_CANCEL + "|" + _SGLANG_SIGTERM
)
# A fresh start after a clean stop: a later run appended to the same log (``>>``, a requeued Slurm job).
RESTART_NEEDLES: tuple[str, ...] = ("Initializing a",)
RESTART_RE = re.compile(r"Initializing an? (?:V1 )?LLM engine")
# An orderly stop was asked for or announced: a traceback printed after it is part of the shutdown.  Narrower
# than CLEAN_RE: vLLM also logs ``[shutdown] Executor: ...`` while tearing down after a failed start.
STOP_RE = re.compile(
    r"received signal|shutdown triggered|^(?:INFO:\s+)?Shutting down(?: FastAPI HTTP server)?\.?$"
    r"|Application shutdown complete|^\s*Done\.\s*$|Data generation complete!|" + _SLURM_CANCEL + "|" + _SGLANG_SIGTERM
)
#: The stops asked for from outside (a signal, a shutdown request, a scheduler's cancel), not a job's own end.
ASKED_STOP_RE = re.compile(r"received signal|shutdown triggered|" + _SLURM_CANCEL + "|" + _SGLANG_SIGTERM)

@dataclass(frozen=True)
class Mentions:
    """Which needles of the phase rules a message holds: the markers whose needles it has, and whether it
    has a shard-progress, restart or clean-end needle (the patterns are checked only for these)."""

    markers: tuple[Marker, ...] = ()
    shards: bool = False
    restart: bool = False
    clean: bool = False


def _mentions(msg: str) -> Mentions:
    markers = tuple(m for m in MARKERS if any(n in msg for n in m.needles))
    shards = any(n in msg for n in SHARD_NEEDLES)
    restart = any(n in msg for n in RESTART_NEEDLES)
    clean = any(n in msg for n in CLEAN_NEEDLES)
    return Mentions(markers, shards, restart, clean) if markers or shards or restart or clean else _NOTHING


_NOTHING = Mentions()
mentions: Memo[Mentions] = Memo(_mentions)

# --- progress ---------------------------------------------------------------------------------------------

SHARD_NEEDLES: tuple[str, ...] = ("checkpoint shards", "loading shards", "Loading safetensors using")
_SHARDS_RE = re.compile(
    r"(?:Loading (?:safetensors|pt|np_cache) checkpoint shards(?: \(eager\))?|Multi-thread loading shards"
    r"|Loading safetensors using [\w ]+?)"
    r":\s*\d+%\s*(?:Completed\s*)?\|[^|]*?(?P<done>\d+)/(?P<total>\d+)"
    r"(?:\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+)?,\s*(?P<rate>\?|[\d.]+)(?P<unit>it/s|s/it))?"
)
# User progress is read from the raw bytes of a line (no decoding: tqdm frames are the most frequent
# candidates in a long log).  tqdm: "37%|###7      | 37/100 [00:01<00:02, 30.00it/s, ok=1]".
PROGRESS_RE = re.compile(rb"<[\d?]|Processed \d")
#: What the funnel's progress pass looks for ("Processed N/M" lines come through the general funnel).
TQDM_MARK_RE = re.compile(rb"<[\d?]")
PROGRESS_NEEDLES: tuple[str, ...] = ("Processed ",)
_PROCESSED_RE = re.compile(rb"Processed (?P<done>\d+)\s*/\s*(?P<total>\d+)(?: (?P<unit>[A-Za-z_]+))?")


@dataclass(frozen=True)
class ShardReading:
    """One reading of the checkpoint-shard progress bar."""

    done: int
    total: int
    rate_per_s: float | None  # shards per second
    eta_s: float | None


@dataclass(frozen=True)
class ProgressReading:
    """A user-level progress line (a client's tqdm bar, ``Processed 37/100 samples``)."""

    done: int
    total: int
    unit: str


def _seconds(clock: str) -> float | None:
    if not clock or "?" in clock:
        return None
    total = 0.0
    for part in clock.split(":"):
        if not part.isdigit():
            return None
        total = total * 60 + int(part)
    return total


def read_shards(message: str) -> ShardReading | None:
    """The shard reading in a loader progress line (the last one when frames share the line)."""
    last = None
    for last in _SHARDS_RE.finditer(message):
        pass
    if last is None:
        return None
    done, total = int(last.group("done")), int(last.group("total"))
    rate: float | None = None
    raw_rate, unit = last.group("rate"), last.group("unit")
    if raw_rate and raw_rate != "?":
        value = float(raw_rate)
        rate = value if unit == "it/s" else (1.0 / value if value > 0 else None)
    eta = _seconds(last.group("remaining") or "")
    if eta is None and rate and total >= done:
        eta = (total - done) / rate
    return ShardReading(done, total, rate, eta)


_FRAME_BACK = re.compile(rb"(\d+)/(\d+) \[[\d:]+$")
#: Bytes ``frame_run`` reads ``N/M [elapsed`` by, backwards from a mark (constants: compiled, no lookups).
_ZERO: Final = 0x30
_NINE: Final = 0x39
_COLON: Final = 0x3A
_SLASH: Final = 0x2F
_BLANK: Final = 0x20
_BRACKET: Final = 0x5B
_FRAME_UNIT = re.compile(rb"<[\d:?]*(?:,\s*(?:\?|[\d.]+)\s*(?P<unit>[A-Za-z_]+)/s|,\s*[\d.]+s/(?P<unit2>[A-Za-z_]+))?")
_NOT_USER_RE = re.compile(rb"shards|CUDA graph|Fetching|Downloading")


def frame_at(buf: bytes, start: int, mark: int) -> tuple[int, int] | None:
    """(done, total) of the tqdm frame whose ``<`` is at ``mark`` in the line starting at ``start``.

    None when no ``N/M [elapsed`` precedes the mark, or the bar is not user progress (checkpoint shards,
    CUDA-graph capture, downloads).
    """
    m = _FRAME_BACK.search(buf, max(start, mark - 64), mark)
    if m is None or _NOT_USER_RE.search(buf, start, mark) is not None:
        return None
    return int(m.group(1)), int(m.group(2))


def progress_key(done: int, total: int) -> list[int]:
    """What a progress reading is reported by: ``[total, percent (done when no total), complete]``."""
    return [total, done * 100 // total if total else done, 1 if done >= total else 0]


def frame_run(buf: bytes, frames: list[int], i: int, pos: int, limit: int,
              key: list[int]) -> tuple[int, int, tuple[int, int, int] | None]:
    """Skip the tqdm frames ``frames[i:]`` (``pos``: the line start before them) that read ``key``
    (``[total, percent, complete]``) and come before ``limit`` (the next needle): a client's bar between log
    records, whose frames the parser's fast path reads one by one to keep only the latest.

    It stops at the first frame it cannot vouch for — another reading, a second mark on a line, a line over
    the cap, no ``N/M`` within ``frame_at``'s reach, a bar that is not user progress.  Returns the line start
    and index of the last frame it vouched for, which the parser reads itself (its line may reach the next
    needle), and (done, total, mark) of the one before it, the latest reading the run leaves.

    A frame's ``N/M [elapsed`` is read byte by byte backwards from its mark (what ``_FRAME_BACK`` matches, its
    last ``/`` past the reach's start): a regex, slices and ``int`` per frame cost twice as much, and a long
    run's frames are most of our recipe's log.
    """
    rfind, not_user = buf.rfind, _NOT_USER_RE.search
    last: tuple[int, int, int, int] | None = None  # (line start, done, total, mark) of the last frame taken
    before: tuple[int, int, int, int] | None = None  # and of the one before it
    head = b""  # the text before the last frame's N/M: a bar's frames share it, checked once
    start, n = pos, len(frames)
    k_total, k_pct, k_complete = key
    while i < n:
        f = frames[i]
        if f >= limit:
            break
        s = max(rfind(b"\n", start, f), rfind(b"\r", start, f)) + 1
        if s == 0:
            if last is not None:  # a second mark on the line of the last frame
                break
            s = pos
        if f - s >= LINE_CAP:
            break
        lo = max(s, f - 64)  # (``frame_at``'s reach: what is read lies past it)
        k = f - 1
        while k > lo and _ZERO <= buf[k] <= _COLON:  # the elapsed time: [\d:]+
            k -= 1
        if k == f - 1 or k <= lo or buf[k] != _BRACKET:
            break
        k -= 1
        if k <= lo or buf[k] != _BLANK:
            break
        k -= 1
        tot, unit, m_end = 0, 1, k
        while k > lo and _ZERO <= (c := buf[k]) <= _NINE:  # M
            tot += (c - _ZERO) * unit
            unit *= 10
            k -= 1
        if k == m_end or k <= lo or buf[k] != _SLASH:
            break
        sl = at = k
        done, unit = 0, 1
        while at > lo and _ZERO <= (c := buf[at - 1]) <= _NINE:  # N
            done += (c - _ZERO) * unit
            unit *= 10
            at -= 1
        if at == sl:
            break
        if at - s != len(head) or not buf.startswith(head, s):
            if not_user(buf, s, f) is not None:
                break
            head = buf[s:at]
        if tot != k_total or (1 if done >= tot else 0) != k_complete or (done * 100 // tot if tot else done) != k_pct:
            break  # (another reading: ``progress_key``)
        before, last = last, (s, done, tot, f)
        start, i = f + 1, i + 1
    if last is None:
        return pos, i, None
    if before is None:
        return pos, i - 1, None
    return last[0], i - 1, (before[1], before[2], before[3])


def frame_unit(buf: bytes, mark: int, end: int) -> str:
    """The unit of the frame whose ``<`` is at ``mark`` (``it`` unless the bar names one)."""
    m = _FRAME_UNIT.match(buf, mark, end)
    unit = (m.group("unit") or m.group("unit2")) if m is not None else None
    return unit.decode("ascii", "replace") if unit else "it"


def read_progress(raw: bytes) -> ProgressReading | None:
    """A user progress reading in a raw line: its first tqdm frame, else ``Processed N/M``."""
    mark = TQDM_MARK_RE.search(raw)
    if mark is not None:
        pair = frame_at(raw, 0, mark.start())
        if pair is not None:
            return ProgressReading(pair[0], pair[1], frame_unit(raw, mark.start(), len(raw)))
        return None
    m = _PROCESSED_RE.search(raw)
    if m is not None:
        unit = m.group("unit") or b"items"
        return ProgressReading(int(m.group("done")), int(m.group("total")), unit.decode("ascii", "replace"))
    return None
