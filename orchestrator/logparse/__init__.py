"""Log intelligence: a pure parser of vLLM job logs (bytes in, events and a verdict out).

Imports only the standard library.  Typical use::

    p = LogParser()
    for chunk in chunks:
        for event in p.feed(chunk):
            ...
    p.finish()
    p.analysis().to_json(file="job.log")

The live follower snapshots the parser (``snapshot()``, small and JSON-able, as of ``line_end_offset``) and
resumes with ``LogParser.restore(snap)``, feeding from that offset.
"""

from __future__ import annotations

from orchestrator.logparse.analysis import Analysis, SignatureCount
from orchestrator.logparse.analyze import analyze_bytes, analyze_path
from orchestrator.logparse.events import (
    ErrorSeen,
    LogEvent,
    PhaseChanged,
    ProgressReported,
    RootCause,
    RootCauseFound,
    ShardsProgressed,
    SignatureMatched,
    TracebackCompleted,
)
from orchestrator.logparse.exits import exit_root_cause, with_exit_code
from orchestrator.logparse.parser import LogParser
from orchestrator.logparse.phases import Phase, ProgressReading, ShardReading
from orchestrator.logparse.signatures import (
    Catalogue,
    CatalogueError,
    Severity,
    Signature,
    load_catalogue,
    parse_catalogue,
    signature_hint,
)

__all__ = [
    "Analysis",
    "Catalogue",
    "CatalogueError",
    "ErrorSeen",
    "LogEvent",
    "LogParser",
    "Phase",
    "PhaseChanged",
    "ProgressReading",
    "ProgressReported",
    "RootCause",
    "RootCauseFound",
    "Severity",
    "ShardReading",
    "ShardsProgressed",
    "Signature",
    "SignatureCount",
    "SignatureMatched",
    "TracebackCompleted",
    "analyze_bytes",
    "analyze_path",
    "exit_root_cause",
    "load_catalogue",
    "parse_catalogue",
    "signature_hint",
    "with_exit_code",
]
