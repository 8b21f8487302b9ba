"""Preflight: refuse an eagle3-extract launch that cannot work, in seconds, before anything starts on the host.

The host's facts come from one worker operation (``worker.preflight``); the judging is pure (``judge``) and
gives a ``Report`` of checks, each ok / warn / fail with one line of evidence and one of what to do.  The
known-bad version table is ``deploy/known-bad.toml`` (``knownbad``).  The edge that calls the host and stores
the report is ``orchestrator.actions.preflightrun``.
"""

from orchestrator.preflight.judge import judge
from orchestrator.preflight.knownbad import KnownBad, parse_table
from orchestrator.preflight.report import Check, Report, Status, lines, summary

__all__ = ["Check", "KnownBad", "Report", "Status", "judge", "lines", "parse_table", "summary"]
