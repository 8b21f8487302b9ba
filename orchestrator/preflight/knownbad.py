"""The known-bad version table (``deploy/known-bad.toml``): parsed from text, matched against versions and a
model family.  Pure: the caller reads the file."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from orchestrator.errors import ConfigError

_CLAUSE = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([0-9]+(?:\.[0-9]+)*)\s*$")
_RELEASE = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)")
Interpreter = Literal["vllm_python", "speculators_python", "any"]


def release(version: str) -> tuple[int, ...] | None:
    """The release numbers of a version: ``0.32.0+cpu`` → (0, 32, 0); ``None`` if it has none."""
    m = _RELEASE.match(version)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def parse_range(text: str) -> list[tuple[str, tuple[int, ...]]]:
    clauses = []
    for part in text.split(","):
        m = _CLAUSE.match(part)
        if not m:
            raise ValueError(f"bad version clause {part.strip()!r} (expected e.g. <0.18.0 or >=0.5,<0.9)")
        clauses.append((m.group(1), tuple(int(p) for p in m.group(2).split("."))))
    return clauses


def in_range(version: str, text: str) -> bool:
    rel = release(version)
    if rel is None:
        return False
    tests = {"<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0,
             "==": lambda c: c == 0, "!=": lambda c: c != 0}
    return all(tests[op](_cmp(rel, bound)) for op, bound in parse_range(text))


@dataclass(frozen=True)
class KnownBad:
    id: str
    package: str
    interpreter: Interpreter
    versions: str
    families: tuple[str, ...]
    severity: Literal["fail", "warn"]
    breaks: str
    todo: str
    source: str
    when: str | None = None

    def matches_family(self, families: Iterable[str]) -> bool:
        return "*" in self.families or bool(set(self.families) & {f.lower() for f in families})


_KEYS = {"id", "package", "interpreter", "versions", "families", "severity", "breaks", "todo", "source", "when"}


def parse_table(text: str, source: str = "known-bad.toml") -> list[KnownBad]:
    """Entries of the table; a malformed one is a ConfigError naming the entry and key."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source}: not valid TOML: {err}") from None
    entries = []
    for i, e in enumerate(raw.get("entry") or []):
        where = f"{source}: entry {e.get('id') or i + 1}"
        unknown = set(e) - _KEYS
        missing = (_KEYS - {"when"}) - set(e)
        if unknown or missing:
            raise ConfigError(f"{where}: " + (f"unknown key {min(unknown)}" if unknown
                                              else f"missing key {min(missing)}"))
        if e["severity"] not in ("fail", "warn") or e["interpreter"] not in ("vllm_python", "speculators_python",
                                                                           "any"):
            raise ConfigError(f"{where}: severity must be fail|warn, interpreter vllm_python|speculators_python|any")
        if e.get("when") not in (None, "final_layer_id"):
            raise ConfigError(f"{where}: when must be final_layer_id")
        try:
            parse_range(e["versions"])
        except ValueError as err:
            raise ConfigError(f"{where}: versions: {err}") from None
        entries.append(KnownBad(id=e["id"], package=e["package"], interpreter=e["interpreter"],
                                versions=e["versions"], families=tuple(f.lower() for f in e["families"]),
                                severity=e["severity"], breaks=e["breaks"], todo=e["todo"], source=e["source"],
                                when=e.get("when")))
    return entries
