"""What a line says of how far the job got: the phase markers, shard and progress readings, the signs of life
that clear a pending error, clean stops; and the events that report a new phase or root cause.

The other half of ``LineRules`` (``rules.py``), which reads each examined line and hands its message here.  The
state lives in ``LineRules``; it is declared here for the type checker (and mypyc), as ``EvidenceRules`` does.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.logparse.events import (
    LogEvent,
    PhaseChanged,
    ProgressReported,
    RootCause,
    RootCauseFound,
    ShardsProgressed,
)
from orchestrator.logparse.lines import decode
from orchestrator.logparse.phases import (
    ANSWERED_RE,
    CLEAN_RE,
    PROGRESS_RE,
    RESTART_RE,
    STOP_RE,
    Phase,
    ProgressReading,
    ShardReading,
    mentions,
    progress_key,
    read_progress,
    read_shards,
    shows_life,
)
from orchestrator.logparse.prefixes import parse_line
from orchestrator.logparse.weighing import EvidenceRules

_WEIGHTS = re.compile(r"Loading weights took (?P<s>[\d.]+)")


class PhaseRules(EvidenceRules):
    """The phase, progress and reporting rules of ``LineRules``."""

    _reported: Phase
    _shards: ShardReading | None
    _progress: ProgressReading | None
    _progress_key_seen: list[int] | None
    _frame: tuple[int, int, bytes] | None  # a frame read on the fast path, not yet kept
    _root_key: list[Any] | None
    _weights_s: float | None

    def _phase_rules(self, msg: str, line_no: int, events: list[LogEvent], is_error: bool, process: str) -> None:
        # Markers move the phase forward; while an error line is pending they are also read as signs of life
        # (the line that logged the error is not one of its own).
        watch = self._ev.pending_error() and not is_error
        if (watch or self._ev.served) and "HTTP/" in msg and ANSWERED_RE.search(msg) is not None:
            self._ev.served_through()  # a request answered: the server lived through what came before
            self._sign_of_life()
            watch = False
        said = mentions(msg)
        for marker in said.markers:
            ahead = self._phase.rank < marker.phase.rank
            if not (ahead or watch):
                continue
            m = marker.pattern.search(msg)
            if m is None:
                continue
            if self._ev.answerable is not None and 400 <= int(m.groupdict().get("status") or 0) < 500:
                self._dirty |= self._ev.answered(line_no)  # the request that front-end traceback failed
            if ahead:
                if self._weights_s is None and (w := _WEIGHTS.search(msg)):
                    self._weights_s = float(w.group("s"))
                self._advance(marker.phase)
            self._serving_seen |= marker.phase.rank >= Phase.SERVING.rank
            if watch and shows_life(m):
                self._sign_of_life()
                watch = False
        if said.shards and self._phase.rank < Phase.SERVING.rank:
            shards = read_shards(msg)
            if shards is not None:
                if self._shards is None or (shards.done, shards.total) != (self._shards.done, self._shards.total):
                    events.append(ShardsProgressed(shards.done, shards.total, shards.rate_per_s,
                                                   shards.eta_s, line_no))
                self._shards = shards
                self._advance(Phase.LOADING)
                if watch:
                    self._sign_of_life()
        if said.restart and self._ev.stop_line is not None and RESTART_RE.search(msg):
            self._ev.stop_line = self._ev.clean_line = None  # a later run, appended to the same log
            self._dirty = True
        if said.clean and self._ev.stop_line is None and CLEAN_RE.search(msg):
            if self._ev.clean_line is None:
                self._ev.clean_line = line_no
                self._dirty = True
            if STOP_RE.search(msg):
                self._ev.note_stop(line_no, msg, process)
                if self._ev.error_lines and self._ev.died_line is None:
                    # An orderly stop after an error: the job did not die of it (a missing command it waited on
                    # since, stopped, is still what went wrong: not a sign of life).
                    self._ev.clear_pending(lived=False)
                    self._dirty = True

    def _progress_rule(self, raw: bytes, line_no: int, events: list[LogEvent]) -> None:
        if PROGRESS_RE.search(raw) is not None:
            reading = read_progress(raw)
            if reading is not None:
                self._on_progress(reading, line_no, events)

    @staticmethod
    def _progress_key(progress: ProgressReading) -> list[int]:
        return progress_key(progress.done, progress.total)

    def _progress_matters(self) -> bool:
        """Whether a progress reading can change more than the reading itself: move the phase, or clear a
        pending error (the fast path skips repeated readings otherwise)."""
        phase = self._phase
        return (phase is Phase.STARTING or phase is Phase.LOADED or phase is Phase.SERVING
                or self._ev.pending_error())

    def _on_progress(self, progress: ProgressReading, line_no: int, events: list[LogEvent]) -> None:
        self._frame = None
        key = self._progress_key(progress)
        if key != self._progress_key_seen:
            self._progress_key_seen = key
            events.append(ProgressReported(progress.done, progress.total, progress.unit, line_no))
        self._progress = progress
        phase = self._phase
        if phase is Phase.STARTING or phase is Phase.LOADED or phase is Phase.SERVING:
            self._advance(Phase.RUNNING)
        if self._ev.pending_error():
            self._sign_of_life()

    def _sign_of_life(self) -> None:
        """The job went on after its pending error lines: they are no longer a candidate cause."""
        self._ev.clear_pending()
        self._dirty = True

    def _advance(self, phase: Phase) -> None:
        if phase.rank > self._phase.rank:
            self._phase = phase
            self._dirty = True
            self._ev.stall = None  # what the job waited for came (Ray placed its workers: it loads)

    def _effective_phase(self) -> Phase:
        if self._ev.failed():
            return Phase.FAILED
        if self._ev.clean_line is not None:
            return Phase.STOPPED
        return self._phase

    def _settle_raw(self, line_no: int, raw: bytes, events: list[LogEvent]) -> None:
        """``_settle`` after a line read without decoding it (a fast path): its text is decoded only when a new
        phase is reported with it, as ``_examine`` would have said it."""
        if self._dirty:
            self._settle(line_no, parse_line(decode(raw)).message, events)

    def _settle(self, line_no: int, text: str, events: list[LogEvent]) -> None:
        """After a line: report a new phase or root cause."""
        if not self._dirty:
            return
        self._dirty = False
        phase = self._effective_phase()
        if phase is not self._reported:
            self._reported = phase
            events.append(PhaseChanged(phase, line_no, text.strip()[:500]))
        item = self._ev.root_item()
        key = None if item is None else [item["line_no"], item["process"], item["exception"], item["message"][:200]]
        if key != self._root_key:
            self._root_key = key
            if item is not None:
                rc = RootCause.from_dict(item)
                events.append(RootCauseFound(rc, rc.line_no))

