"""vLLM process prefixes and the logging-format header.

Two styles reach a log file:

* 0.16-era stream prefixes: ``(Worker_TP3 pid=255661) `` written in front of *every* line a process writes
  (log records, prints, tqdm frames -- where the ``\\r`` comes after the prefix).
* >=0.2x format prefixes: ``(EngineCore pid=N) INFO 11-29 10:02:27 [core.py:1512] msg`` on log records only.

Both parse the same way: an optional ``(name pid=N)`` group (Ray adds ``, ip=...`` and may nest two; 0.8-0.9
write ``(VllmWorker rank=4 pid=N)``, 0.10 ``(VllmWorker TP0 pid=N)``, Ray's bare ``(pid=N)`` has no name),
then an optional ``LEVEL MM-DD HH:MM:SS [file:line] `` header (vLLM <= 0.7 wrote ``file:line]`` without the ``[``).  Lines
without either belong to process ``main``.  What a log collector put in front of every line is skipped
first: a timestamp (``kubectl logs --timestamps``, ``docker logs -t``, Buildkite's ``[2025-05-20T05:24:31Z]``),
journalctl's ``short`` and ``short-iso`` formats, docker compose's ``service-1  | `` (with or without its
timestamps), ``kubectl logs --prefix``'s ``[pod/name/container] ``, stern's ``pod-7d9f8c6b5d-x2k4q container ``,
``srun --label``'s task number (``0: ``) and FastChat's logger (``2025-03-24 22:04:27 | ERROR | stderr | ``).
eorch's recipe tags its client's lines (``[speculators] ``): they are the writer ``speculators``'s.
PyTorch's rank prefix on a distributed process's stderr (``[rank0]: ``) names the writer when no process group
does; Ray's note at a line's end that it folded repeats (`` [repeated 6x across cluster]``) is not part of the
message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from orchestrator.logparse.memo import Memo

MAIN = "main"
#: What eorch's EAGLE-3 recipe puts in front of each line of its client (``speculators generate-offline-data``) in
#: the run log, and the writer those lines are read as.
CLIENT_TAG, CLIENT = "[speculators] ", "speculators"
_CLIENT_TAG_BYTES = CLIENT_TAG.encode()

#: A process's name in its group; 0.10 wrote the worker's place after a blank (``VllmWorker TP0``, ``TP1_PP0``); Ray
#: Data names an actor by the stages it runs (``MapWorker(MapBatches(vLLMEngineStageUDF))``).
_WORD = r"[A-Za-z0-9_.\-:]+"
_NAME = _WORD + r"(?:\(" + _WORD + r"(?:\(" + _WORD + r"\))?\))?(?: (?:TP|PP|DP|EP)\d+(?:_(?:TP|PP|DP|EP)\d+)*)?"
#: A process group: ``(name pid=N)``, ``(name rank=R pid=N)``, ``(pid=N, ip=...)``; SkyPilot's around its job's
#: output, with commas: ``(task, pid=N)``, ``(worker1, rank=1, pid=N, ip=...)``.
PROC = r"\((?:(?P<proc>" + _NAME + r")(?P<rank>,? rank=\d+)?,? )?pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)"
_PROC_RE = re.compile(PROC + " ?")
#: PyTorch's prefix of every stderr line of a distributed rank (``[rank0]: Traceback ...``).
_RANK_RE = re.compile(r"\[rank(?P<rank>\d+)\]: ?")
_RANK_BYTES_RE = re.compile(_RANK_RE.pattern.encode())
#: Ray's note that it folded repeats of a line from several workers into this one.
_RAY_REPEATED_RE = re.compile(r" \[repeated \d+x across cluster\]$")
_HEADER_RE = re.compile(
    # (its stamp replaced by "..." in a paste that leaves out what does not matter, or left out by a logging
    # format without one: ``ERROR [async_llm.py:843] ``, the file then always in brackets)
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:(?P<ts>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d|\.\.\.|\u2026)(?:\.\d+)? "
    r"\[?|\[)(?P<file>[^\]\s\[]+?):(?P<line>\d+)\] ?"
)
#: PyTorch's own log records (glog's layout: ``E0731 16:03:52.115000 116603 torch/_inductor/x.py:539] ``), with
#: the compile id ``[1/0]`` torch.compile's records carry; every line of a multi-line record repeats it.
_GLOG_RE = re.compile(r"(?P<lvl>[IWEF])(?P<ts>\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ (?P<file>[^\s:\]]+):(?P<line>\d+)\] "
                      r"(?:\[!?\d+/\d+(?:_\d+)?\] )?")
_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
#: The end of vLLM's record header (``[multiproc_executor.py:492] ``) alone at a line's start: a paste that
#: began inside the header.  What follows is the message.
_HEADER_TAIL_RE = re.compile(r"\[[\w\-]+\.py:\d+\] ")
#: c10's own records, in brackets (PyTorch >= 2.2's C++ ``LOG``: ``[rank0]:[E623 13:46:28.176383770
#: compiler_depend.ts:429] ReshapeAndCacheOperation setup failed!``).
_C10_RE = re.compile(r"\[(?P<lvl>[IWEF])(?P<ts>\d{3,4} \d\d:\d\d:\d\d\.\d+) (?P<file>[^\s:\]]+):(?P<line>\d+)\] ")
#: Python logging's default layout (``logging.basicConfig()``: ``WARNING:sgl_jax.srt.entrypoints.engine:...``).
_BASIC_RE = re.compile(r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[A-Za-z_][\w.]*):")
#: The same in brackets, as ms-swift's loggers write it (``[WARNING:swift] max_model_len(8096) - ...``).
_BRACKETED_RE = re.compile(r"\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[A-Za-z_][\w.]*)\] ?")
_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|SUCCESS|TRACE"
#: logging's %(asctime)s, with or without its ms (or a ``datefmt`` without seconds: genai-perf's ``2025-03-10 10:13``)
_ASCTIME = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?"
#: Python logging's layouts that start with ``%(asctime)s``, as scripts and tools around vLLM configure them:
#: ``ts - name - LEVEL - msg`` (the logging cookbook's), loguru's ``ts | LEVEL    | module:fn:12 - msg``,
#: ``ts [LEVEL] name: msg`` (genai-perf's ``ts [LEVEL] name:12 - msg``), ``ts LEVEL msg`` (with the pid and a
#: bracketed source after the level, as some SGLang builds write: ``ts ERROR 31423 [ TP6 PP0 scheduler.py:2547] msg``,
#: on every line of a record) and ``ts - LEVEL - msg``, and a supervisor's own ``ts [Error] (Component) msg``
#: (Lemonade's; its child's lines come as ``(Process)`` records: ``_SUPERVISED``).  Only a record's first line
#: carries the others.
_ASCTIME_RE = re.compile(
    rf"(?P<ts>{_ASCTIME})"
    rf"(?: - (?P<l1>[\w.\-]+) - (?P<v1>{_LEVELS}) - "
    rf"| \| (?P<v2>{_LEVELS}) *\| (?P<l2>[\w.\-:<>]+) - "
    rf"| \[(?P<v3>{_LEVELS})\] (?:(?P<l3>[\w.\-]+)(?::\d+ -|:) )?"
    rf"| (?P<v4>{_LEVELS}) (?:(?P<pid4>\d+) \[ ?(?P<at4>[^\]]*?\.py:\d+)\] )?"
    rf"| - (?P<v5>{_LEVELS}) - "
    rf"| \[(?P<v6>Error|Warning|Warn|Info|Debug|Trace)\] (?=\()"
    r")"
)
#: A script relaying a server's output through its own logger, each line tagged (``... - INFO - vLLM: ``,
#: ``... - INFO - [container] ``).
_RELAY_TAG_RE = re.compile(r"[A-Za-z][\w.\-]{0,23}: |\[[A-Za-z][\w.\-]{0,23}\] ")
#: The same led by a bracketed stamp and level, more bracketed fields after them (thread, logger) and a marker
#: before the message: ``[2025-03-05 14:28:45,820] [ERROR] [MainThread] [vllm.worker.worker_base] >>> msg``.
_BRACKETED_ASCTIME_RE = re.compile(rf"\[(?P<ts>{_ASCTIME})\] "
                                   rf"\[(?P<lvl>{_LEVELS})\] (?P<fields>(?:\[[^\]]*\] )*)(?:>>> ?|- |: )?")
_LEVEL_NAMES = {"WARN": "WARNING", "FATAL": "CRITICAL", "SUCCESS": "INFO", "TRACE": "DEBUG", "Error": "ERROR",
                "Warning": "WARNING", "Warn": "WARNING", "Info": "INFO", "Debug": "DEBUG", "Trace": "DEBUG"}
#: SGLang's records: ``[2025-05-28 06:32:54 TP0] `` (a scheduler's place: ``DP1 PP0 TP3 EP3``) or ``[ts] `` (the
#: main process's).  Only a record's first line carries it (a traceback's lines after it have none).
_SGLANG_RE = re.compile(r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<place>(?: (?:DP|PP|TP|EP|CP|ATTN_DP)\d+)*)\] ")
# Only a prefix and blanks: 0.16 writes "(Worker_TP0 pid=1) " then "\r" + a tqdm frame.
_PREFIX_ONLY_RE = re.compile(r"^\s*" + PROC + r"\s*$")
#: What a log collector prepends: docker compose's service column (its name lost in a paste: `` | ``; Buildkite's web
#: view copies a no-break space before it) or pm2's (``0|app  | ``),
#: ``kubectl logs --prefix``'s pod or stern's pod and container (a Deployment's pod: ``name-<hash>-<id>``),
#: then an RFC 3339 stamp (kubectl/docker ``--timestamps``, in brackets: Buildkite's) or a syslog one, either
#: with journalctl's ``host unit[pid]:`` after it, or ``srun --label``'s task number; and a docker compose
#: column that went through another collector.
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?"
_SYSLOG = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
#: journalctl's ``host unit[pid]:`` (its host left out of a paste: ``unit[pid]:``), only after its own stamps.
_JOURNAL = r" (?:[\w.\-]+ [\w.\-@/]+(?:\[\d+\])?|[\w.\-@/]+\[\d+\]):"
_FASTCHAT = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| [A-Z]+ \| [\w.\-]+ \| "  # FastChat's ``ts | LEVEL | stderr | ``
#: Open MPI's ``mpirun --tag-output`` (``[1,0]<stderr>:``), after ``--timestamp-output``'s date when it has one.
_MPIRUN = r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[\d+,\d+\]<std(?:out|err|diag)>:"
#: A supervisor's stamp, level and source on each line of its child's output (Lemonade's ``ts [Error] (Process) ``,
#: TorchServe's ``ts [INFO ] W-9000-model_1.0-stdout MODEL_LOG - ``).
_SUPERVISED = (r"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[(?:Error|Warning|Info|Debug|Trace)\] \(Process\) "
               r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3} \[[A-Z]+ ?\] W-\d+-[\w.\-]+-std(?:out|err) MODEL_LOG - )")
#: A harness's own tag in front of each line it relays from a vLLM process (``[VLLM LOG] (Worker_TP3 pid=N) ...``):
#: capitals in brackets, not a level, before a process prefix or a record's level and stamp.
_TAGGED = (r"\[(?!(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\])[A-Z][A-Z0-9_]*(?: [A-Z0-9_]+){0,3}\] "
           r"(?=\(|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d)")
#: pdsh's ``host: `` in front of each line of a multi-node job (DeepSpeed's launcher runs one through it): an IPv4
#: address, or a host name ending in a number in front of PyTorch's ``[rank3]: `` (a word and a colon alone is
#: how a message starts: ``ValueError: ``).
_PDSH = r"(?:\d{1,3}(?:\.\d{1,3}){3}: |[a-z][a-z0-9\-]*\d: (?=\[rank\d))"
#: (an RFC 3339 stamp with its offset, or one a log shipper wrote with a blank before the offset and the zone's
#: name after it: ``2025-10-24T17:12:08.363544040 +08:00 CST``; in brackets, with its offset: a job runner's)
_STAMP = (rf"(?:(?:{_ISO}[+-]\d\d:?\d\d|{_SYSLOG})(?:{_JOURNAL})?|{_ISO} [+-]\d\d:\d\d [A-Z]{{2,5}}|{_ISO}Z?"
          rf"|\[{_ISO}(?:Z|[+-]\d\d:?\d\d)?\])")
#: A job runner's name for the job between its stamp and the job's line (``[ts] job-name-3da56-cfcd2 >> ``).
_JOB_NAME = r"(?:[A-Za-z0-9][\w.\-]* >> )?"
_LABELS = r"(?: \{[^{}]*\})?"  # Loki's logcli: the stream's labels after its stamp
#: A stamp with a space for the ``T`` (``ts``'s, a script's): only in front of another collector's stamp, as it
#: is also how Python logging starts its records.
_SPACED = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? "
#: A cloud console's severity before its UTC stamp (Google Cloud Logging's copy: ``ERROR 2025-04-05T00:01:19.5Z``):
#: the collector's word for the stream, not the record's level.
_SEVERITY = rf"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) (?={_ISO}Z)"
#: A vLLM record's head (``ERROR 07-09 17:59:40 [core.py:586] ``): a spaced stamp in front of one is a collector's
#: (a container console's copy: ``2025-07-10 08:59:40 ERROR 07-09 17:59:40 [core.py:586] ...``).
_VLLM_HEAD = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \["
_COLLECTOR = (
    r"(?:" + _FASTCHAT + "|" + _SUPERVISED + "|" + _MPIRUN + "|" + _TAGGED + r")?"
    r"(?:[A-Za-z0-9][\w.\-]*\s+\| |\d+\|[\w.\-]+\s*\| |[ \xa0]*\| |\[pod/[^\]\s]+\] "
    r"|[a-z0-9][a-z0-9.\-]*-[a-z0-9]{8,10}-[a-z0-9]{5} [a-z0-9][a-z0-9\-]* )?"
    # Stamps of one or two collectors, one through the other (``ts`` over kubectl's, Slurm's output in the
    # journal), with ``srun --label``'s task number after them or in front of them (a job's own stamps).
    # (A stamp alone on a line, no blank after it, stamps an empty line: Buildkite's.)
    rf"(?:(?:\s{{0,3}}\d{{1,4}}: (?={_STAMP}))?(?:{_SPACED}(?={_STAMP})|{_SEVERITY})?"
    rf"(?:{_STAMP}(?:{_LABELS} |(?=[\r\n]|$))){{1,2}}{_JOB_NAME}(?:\s{{0,3}}\d{{1,4}}: )?|\s{{0,3}}\d{{1,4}}: "
    rf"|{_SPACED}(?={_VLLM_HEAD}))?"
    r"(?:[A-Za-z0-9][\w.\-]*\s+\| | *\| )?"  # a collector in front of a docker compose column
    # The job's own output through pdsh, a supervisor or mpirun, collected again (kubectl's, the journal's stamps).
    r"(?:" + _PDSH + "|" + _FASTCHAT + "|" + _SUPERVISED + "|" + _MPIRUN + r")?"
)
_COLLECTOR_RE = re.compile(_COLLECTOR, re.ASCII)  # as the bytes pattern reads it (``quick_key``)
#: FastChat's column behind a launcher's process prefix (SkyPilot's ``(task, pid=N)`` in front of each line of its
#: job's output).
_FASTCHAT_RE = re.compile(_FASTCHAT)
_COLLECTOR_BYTES_RE = re.compile(_COLLECTOR.encode())
# Both match the empty string; a line starting with "(" (a process prefix) has no collector's prefix.


_SGLANG_TAIL_RE = re.compile(_SGLANG_RE.pattern + "$")
_SGLANG_PLACE_RE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<place>[A-Z_]+\d+(?: [A-Z_]+\d+)*)\]")


def sglang_place(record: str | None) -> str | None:
    """The scheduler's place an SGLang record names (``TP4``, ``DP1 PP0 TP3 EP3``): the process that wrote it
    when no stream prefix says (each rank's scheduler is a process of its own); None for another record."""
    m = _SGLANG_PLACE_RE.fullmatch(record) if record is not None and record.startswith("[") else None
    return None if m is None else m.group("place")


def head_before_record(head: str) -> str:
    """A line's text before its message, less the record header at its end that only a record's first line
    carries (SGLang's ``[ts TP0] ``): what the record's later lines start with."""
    m = _SGLANG_TAIL_RE.search(head)
    return head if m is None else head[:m.start()]


def _name(m: re.Match[str]) -> str:
    proc = m.group("proc") or "pid"
    rank = m.group("rank")
    return f"{proc}{rank.lstrip(',')}" if rank else proc
_MP_HEADER_RE = re.compile(r"^Process (?P<proc>[A-Za-z0-9_.\-:]+):$")


@dataclass(frozen=True)
class ParsedLine:
    """A decoded line split into who wrote it and what it says."""

    process: str  # "Worker_TP3", "EngineCore", "APIServer", ... or "main"
    pid: int | None
    level: str | None  # set for vLLM log records
    record: str | None  # "LEVEL ts [file:line]": identical for every line of one multi-line record
    message: str  # the text after all prefixes

    @property
    def lines_record(self) -> str | None:
        """The record every line of a traceback started here carries: vLLM's and logging's repeat on each line
        of a multi-line record; SGLang's (a record with no level) mark only its first line."""
        return None if self.level is None else self.record

    @cached_property
    def key(self) -> str:
        """Identity of the writer, for grouping interleaved lines."""
        return self.process if self.pid is None else f"{self.process}:{self.pid}"


def parse_line(text: str, inherited: tuple[str, int] | None = None) -> ParsedLine:
    """Split ``text`` (already decoded, ANSI-free).

    ``inherited`` is the (process, pid) of a prefix-only line that ended in ``\\r`` just before this one.
    """
    return _parsed(text) if inherited is None else _parse(text, inherited)


def _record(h: re.Match[str]) -> str:
    """The record a vLLM header (``_HEADER_RE``'s match) starts: its level, stamp (none in some formats) and place."""
    return f"{h.group('lvl')} {h.group('ts') or ''} [{h.group('file')}:{h.group('line')}]"


def _parse(text: str, inherited: tuple[str, int] | None = None) -> ParsedLine:
    process, pid = (inherited if inherited else (MAIN, None))
    rest = text
    pos = 0 if rest[:1] == "(" else _COLLECTOR_RE.match(rest).end()  # type: ignore[union-attr]
    if rest.startswith(CLIENT_TAG, pos):  # eorch's recipe: its client's lines, rich's log records and tracebacks
        process, pos = CLIENT, pos + len(CLIENT_TAG)
    # Leading VLLM_LOGGING_PREFIX or Ray nesting: take the last "(name pid=N)" group at the front.
    while True:
        m = _PROC_RE.match(rest, pos)
        if m is None:
            break
        process, pid = _name(m), int(m.group("pid"))
        pos = m.end()
    if pid is not None and rest[pos:pos + 1].isdigit() and (f := _FASTCHAT_RE.match(rest, pos)) is not None:
        pos = f.end()
    if rest.startswith(".", pos):  # progress dots printed without a line end, the next record glued to them
        dots = len(rest) - len(rest[pos:].lstrip("."))
        pos = dots if rest.startswith("[rank", dots) else pos
    r = _RANK_RE.match(rest, pos) if rest.startswith("[rank", pos) else None
    if r is not None:
        process = f"rank{r.group('rank')}" if pid is None else process
        pos = r.end()
    if rest.endswith("across cluster]"):
        rest = _RAY_REPEATED_RE.sub("", rest)
    h = _HEADER_RE.match(rest, pos)
    if h is not None:
        return ParsedLine(process, pid, h.group("lvl"), _record(h), rest[h.end():])
    c = _C10_RE.match(rest, pos) if rest.startswith("[", pos) else None
    if c is not None:  # (the message keeps its header: signatures name the file, ``ProcessGroupNCCL.cpp``)
        level = _GLOG_LEVELS[c.group("lvl")]
        return ParsedLine(process, pid, level, f"{level} {c.group('ts')} [{c.group('file')}:{c.group('line')}]",
                          rest[pos:])
    g = _GLOG_RE.match(rest, pos) if rest[pos:pos + 1] in _GLOG_LEVELS else None
    if g is not None:
        level = _GLOG_LEVELS[g.group("lvl")]
        record = f"{level} {g.group('ts')} [{g.group('file')}:{g.group('line')}]"
        return ParsedLine(process, pid, level, record, rest[g.end():])
    sg = _SGLANG_RE.match(rest, pos) if rest.startswith("[20", pos) else None
    if sg is not None:
        return ParsedLine(process, pid, None, f"[{sg.group('ts')}{sg.group('place')}]", rest[sg.end():])
    ba = _BRACKETED_ASCTIME_RE.match(rest, pos) if rest.startswith("[20", pos) else None
    if ba is not None:
        level = _LEVEL_NAMES.get(ba.group("lvl"), ba.group("lvl"))
        return ParsedLine(process, pid, level, f"{level} {ba.group('ts')} {ba.group('fields').strip()}".rstrip(),
                          rest[ba.end():])
    a = _ASCTIME_RE.match(rest, pos) if rest[pos:pos + 1].isdigit() else None
    if a is not None:
        # A script's logger relaying vLLM's lines (tagged or not, their process prefix kept or not): the relayed
        # record is the line's record, its writer the line's.
        t = _RELAY_TAG_RE.match(rest, a.end())
        at, relayed, relayed_pid = a.end() if t is None else t.end(), process, pid
        while (m := _PROC_RE.match(rest, at)) is not None:
            relayed, relayed_pid, at = _name(m), int(m.group("pid")), m.end()
        h = _HEADER_RE.match(rest, at)
        if h is not None:
            return ParsedLine(relayed, relayed_pid, h.group("lvl"), _record(h), rest[h.end():])
        i = next(i for i in "123456" if a.group(f"v{i}"))
        level = _LEVEL_NAMES.get(a.group(f"v{i}"), a.group(f"v{i}"))
        if a.group("at4"):  # every line of the record carries it, as vLLM's do
            return ParsedLine(process, int(a.group("pid4")), level, f"{level} {a.group('ts')} [{a.group('at4')}]",
                              rest[a.end():])
        logger = a.group(f"l{i}") if i in "123" else None
        return ParsedLine(process, pid, level, f"{level} {a.group('ts')} {logger or ''}".rstrip(), rest[a.end():])
    b = _BASIC_RE.match(rest, pos) if rest[pos:pos + 1] in "DIWEC" else None
    if b is None and rest.startswith("[", pos):
        b = _BRACKETED_RE.match(rest, pos)
    if b is not None:
        return ParsedLine(process, pid, b.group("lvl"), f"{b.group('lvl')} {b.group('logger')}", rest[b.end():])
    t = _HEADER_TAIL_RE.match(rest, pos) if rest.startswith("[", pos) else None
    return ParsedLine(process, pid, None, None, rest[pos if t is None else t.end():])


_parsed: Memo[ParsedLine] = Memo(_parse)

#: vLLM's worker processes (``Worker_TP0``, ``Worker_DP0_TP6_EP6``, ``VllmWorker-0``), as their names start.
WORKERS = ("Worker", "VllmWorker")

_QUICK_RE = re.compile(rb"(?:" + PROC.encode() + rb" ?)+")


def quick_key(raw: bytes) -> str | None:
    """``ParsedLine.key`` of a raw line without decoding it, or None when only a full parse can tell
    (ANSI codes or NULs in the line, a stamped line naming a pid)."""
    if b"\x1b" in raw or b"\x00" in raw or (raw[:1].isdigit() and b"pid=" in raw):
        return None  # (a logger's stamp first, a relayed writer's prefix after it: ``_parse`` tells)
    pos = 0 if raw[:1] == b"(" else _COLLECTOR_BYTES_RE.match(raw).end()  # type: ignore[union-attr]
    if raw.startswith(_CLIENT_TAG_BYTES, pos):
        pos += len(_CLIENT_TAG_BYTES)
        if not raw.startswith((b"(", b"[rank"), pos):
            return CLIENT
    m = _QUICK_RE.match(raw, pos)
    if m is None:
        r = _RANK_BYTES_RE.match(raw, pos) if raw.startswith(b"[rank", pos) else None
        return MAIN if r is None else f"rank{int(r.group('rank'))}"
    proc = (m.group("proc") or b"pid").decode("ascii") + (m.group("rank") or b"").decode("ascii")
    return f"{proc}:{int(m.group('pid'))}"


_PREFIX_ONLY_BYTES_RE = re.compile(_PREFIX_ONLY_RE.pattern.encode())


def is_prefix_only(raw: bytes) -> bool:
    """Whether a raw line is nothing but a process prefix (undecoded: ANSI codes make it False, and the
    caller then takes the slow path)."""
    return b"pid=" in raw and _PREFIX_ONLY_BYTES_RE.match(raw) is not None


def prefix_only(text: str) -> tuple[str, int] | None:
    """(process, pid) when ``text`` is nothing but a process prefix."""
    m = _PREFIX_ONLY_RE.match(text)
    return (_name(m), int(m.group("pid"))) if m else None


_GLUED_HEADER_RE = re.compile(r"(?:" + PROC + r" ?|\[rank\d+\]: ?)+(?:Exception Group )?"
                              r"Traceback \(most recent call last\):\s*$")


def glued_header(message: str) -> int | None:
    """Where a writer's prefix starts that a traceback header follows, in a line that other text began (the
    last frame of a progress bar, written without a line end): ``...| 0/1 [00:00<?][rank0]: Traceback ...``;
    None when the line has none after some text."""
    if "Traceback" not in message:
        return None
    m = _GLUED_HEADER_RE.search(message)
    return m.start() if m is not None and m.start() > 0 else None


def multiprocessing_header(message: str) -> str | None:
    """``Process EngineCore:`` (printed by multiprocessing before a child's traceback) -> ``EngineCore``."""
    m = _MP_HEADER_RE.match(message.strip())
    return m.group("proc") if m else None


def head_of(raw: bytes, text: str, message: str) -> str | None:
    """The text before ``message`` on its line, as its frame lines start with it: the decoded text's, or for
    a line with ANSI codes (a coloured prefix), the raw bytes' when they are ASCII and end with the message;
    None when the line does not end with its message (Ray's `` [repeated 6x across cluster]`` was cut off)."""
    if b"\x1b" not in raw:
        return text[:len(text) - len(message)] if text.endswith(message) else None
    tail = message.encode()
    if not tail or not raw.endswith(tail) or not raw[:-len(tail)].isascii():
        return None
    return raw[:-len(tail)].decode("ascii")
