"""Log intelligence: a pure parser of vLLM job logs (bytes in, events and a verdict out).

Imports only the standard library.  Typical use::

    p = LogParser()
    for chunk in chunks:
        for event in p.feed(chunk):
            ...
    p.finish()
    p.analysis().to_json(file="job.log")

``LogParser`` reads one vLLM run.  A job's log may hold several (a script that starts the server again):
``runs.RunSplitter`` has the same surface and reads each run with a parser of its own, the verdict being the
last run's; ``log analyze`` and the live follower both read a log through it.  The follower snapshots it
(``snapshot()``, small and JSON-able, as of ``line_end_offset``) and resumes with ``RunSplitter.restore(snap)``,
feeding from that offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.logparse import compiled as _compiled

_compiled.install()  # the modules compiled by mypyc, when a build of these very sources is installed

if TYPE_CHECKING:
    from orchestrator.logparse.analysis import Analysis, SignatureCount
    from orchestrator.logparse.analyze import analyze_bytes, analyze_path, analyze_stream
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
    "analyze_stream",
    "exit_root_cause",
    "load_catalogue",
    "parse_catalogue",
    "signature_hint",
    "with_exit_code",
]

# The names above, imported on first use: `from orchestrator.logparse.inert import inert` (a console's last
# guard) must not load the parser and its signature catalogue, which `eorch runs` never needs.
_WHERE: dict[str, str] = {
    "Analysis": "orchestrator.logparse.analysis",
    "Catalogue": "orchestrator.logparse.signatures",
    "CatalogueError": "orchestrator.logparse.signatures",
    "ErrorSeen": "orchestrator.logparse.events",
    "LogEvent": "orchestrator.logparse.events",
    "LogParser": "orchestrator.logparse.parser",
    "Phase": "orchestrator.logparse.phases",
    "PhaseChanged": "orchestrator.logparse.events",
    "ProgressReading": "orchestrator.logparse.phases",
    "ProgressReported": "orchestrator.logparse.events",
    "RootCause": "orchestrator.logparse.events",
    "RootCauseFound": "orchestrator.logparse.events",
    "Severity": "orchestrator.logparse.signatures",
    "ShardReading": "orchestrator.logparse.phases",
    "ShardsProgressed": "orchestrator.logparse.events",
    "Signature": "orchestrator.logparse.signatures",
    "SignatureCount": "orchestrator.logparse.analysis",
    "SignatureMatched": "orchestrator.logparse.events",
    "TracebackCompleted": "orchestrator.logparse.events",
    "analyze_bytes": "orchestrator.logparse.analyze",
    "analyze_path": "orchestrator.logparse.analyze",
    "analyze_stream": "orchestrator.logparse.analyze",
    "exit_root_cause": "orchestrator.logparse.exits",
    "load_catalogue": "orchestrator.logparse.signatures",
    "parse_catalogue": "orchestrator.logparse.signatures",
    "signature_hint": "orchestrator.logparse.signatures",
    "with_exit_code": "orchestrator.logparse.exits",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
