"""A preflight report: checks, each ok / warn / fail with one line of evidence and one line of what to do."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


MARK = {Status.OK: "ok  ", Status.WARN: "WARN", Status.FAIL: "FAIL"}
STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red"}


@dataclass(frozen=True)
class Check:
    id: str
    status: Status
    evidence: str
    todo: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "status": self.status.value, "evidence": self.evidence, "todo": self.todo}


def ok(id_: str, evidence: str) -> Check:
    return Check(id_, Status.OK, evidence)


def warn(id_: str, evidence: str, todo: str) -> Check:
    return Check(id_, Status.WARN, evidence, todo)


def fail(id_: str, evidence: str, todo: str) -> Check:
    return Check(id_, Status.FAIL, evidence, todo)


@dataclass(frozen=True)
class Report:
    checks: tuple[Check, ...]
    gpus: tuple[int, ...] = ()  # the GPU indices the run will use (and lock)
    seconds: float | None = None  # host fact gathering, or the whole preflight once timed by the caller
    forced: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status is Status.FAIL]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status is Status.WARN]

    @property
    def verdict(self) -> Status:
        return Status.FAIL if self.failed else Status.WARN if self.warnings else Status.OK

    def with_(self, **changes: Any) -> Report:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "failed": len(self.failed), "warnings": len(self.warnings),
                "seconds": self.seconds, "forced": self.forced, "gpus": list(self.gpus),
                "checks": [c.to_dict() for c in self.checks], **self.extra}


def summary(report: dict[str, Any]) -> str:
    """One line for a stored report (a dict from ``Report.to_dict``)."""
    secs = f" in {report['seconds']:.1f} s" if report.get("seconds") is not None else ""
    counts = f"{report.get('failed', 0)} failed, {report.get('warnings', 0)} warnings, {len(report['checks'])} checks"
    forced = " · launched with --force" if report.get("forced") else ""
    return f"preflight {report['verdict']} ({counts}){secs}{forced}"


def lines(report: dict[str, Any], *, all_checks: bool = True, markup: bool = True) -> list[str]:
    """The summary, then one line per check (evidence) and, for warn/fail, one line of what to do."""
    from rich.markup import escape

    def e(value: object) -> str:  # evidence is the host's text: `vllm[cpu]`, `[Errno 2]` are not tags
        return escape(str(value)) if markup else str(value)

    out = [summary(report)]
    for c in report["checks"]:
        status = Status(c["status"])
        if status is Status.OK and not all_checks:
            continue
        mark = f"[{STYLE[status]}]{MARK[status]}[/]" if markup else MARK[status]
        out.append(f"  {mark} {e(c['id'])}: {e(c['evidence'])}")
        if status is not Status.OK and c.get("todo"):
            out.append(f"       → {e(c['todo'])}")
    return out
