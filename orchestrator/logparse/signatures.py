"""The signature catalogue: versioned patterns of known failures, loaded from ``signatures.toml``."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any

from orchestrator.logparse import native
from orchestrator.logparse.memo import Memo


class Severity(str, Enum):
    """How a signature weighs in the verdict."""

    CAUSE = "cause"
    SYMPTOM = "symptom"
    WARNING = "warning"


@dataclass(frozen=True)
class Signature:
    """One known failure pattern."""

    id: str
    severity: Severity
    versions: tuple[str, ...]
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    hint: str
    funnel: bool = True
    points_to: re.Pattern[str] | None = None
    harmless: bool = False  # a warning that is not even evidence when vLLM logs it as an ERROR record
    #: A symptom that says a process died (a clean end after it is its consequence), or a cause that kills its
    #: process where it stands (the tracebacks others print after it are what its death did).
    fatal: bool = False
    aftermath: bool = False  # a symptom of the teardown itself: the root shown only when no other symptom is
    stalls: bool = False  # a warning that the job will wait for ever: what ends it (a kill, a stop) is its doing
    after_stop: bool = False  # a cause that, just after an orderly stop, is the stop's doing (its SIGKILL)
    ends_serving: bool = False  # a cause only before the job serves: after, it ends the serving in order
    handled: bool = False  # a warning whose record goes on with a traceback the process caught and lived with
    lived_with: bool = False  # a cause a script goes on from: a sign of life after it makes it an error it lived with
    #: A cause that reports a process's death, not its reason (Ray's "actor died unexpectedly"): when a known
    #: cause's line came before it, it is that cause's consequence.
    after_cause: bool = False
    #: A cause shown even in a traceback its process caught and went on from: it proves a failure before it
    #: (``LLM.__del__`` finding no engine: its constructor raised).
    failed_before: bool = False

    def matches(self, text: str) -> bool:
        """True when ``text`` (a decoded, prefix-stripped line) shows this signature."""
        return any(n in text for n in self.needles) and self.pattern.search(text) is not None

    def referenced_message(self, text: str) -> str | None:
        """For an echo such as ``Worker failed with error 'X'``: the message X it points back to."""
        if self.points_to is None:
            return None
        m = self.points_to.search(text)
        return m.group("ref") if m else None


@dataclass(frozen=True)
class Catalogue:
    """All signatures, in file order."""

    signatures: tuple[Signature, ...]
    _gate: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _gate_words: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _by_needle: tuple[tuple[str, tuple[int, ...]], ...] = field(init=False, repr=False, compare=False)
    # The same needles and gate keys as UTF-8, for native search (a str holds a needle iff its UTF-8 does).
    _needles_b: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    _keys_b: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    echoes: tuple[Signature, ...] = field(init=False, repr=False, compare=False)  # those with ``points_to``
    symptoms: tuple[Signature, ...] = field(init=False, repr=False, compare=False)
    _seen: Memo[tuple[Signature, ...]] = field(init=False, repr=False, compare=False)  # _shown, kept
    echo_refs: Memo[tuple[str, ...]] = field(init=False, repr=False, compare=False)
    shows_symptom: Memo[bool] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Hashed once: each run of a log builds its rules, which look up the catalogue's funnel by it (hashing
        # ~200 signatures deep each time cost 135 us a run, 3% of a log of many short runs).
        object.__setattr__(self, "_hash", hash(self.signatures))
        needles = {n for s in self.signatures for n in s.needles}
        # A regex skips quickly over characters that start no needle; needles starting with a common one (a
        # lowercase letter, "(") are looked for with ``in`` (memmem) instead.
        keys = {_gate_key(n) for n in needles}
        common = {n for n in keys if n[0].islower() or n[0] in "( "}
        rare = keys - common
        gate = re.compile(trie_pattern(rare)) if rare else re.compile(r"(?!)")
        object.__setattr__(self, "_gate", gate)
        object.__setattr__(self, "_gate_words", tuple(sorted(common)))
        # Each needle once, with the signatures it belongs to: a line that passes the gate is checked for ~100
        # needles (memmem each) instead of every signature's needles in turn.
        index: dict[str, list[int]] = {}
        for i, sig in enumerate(self.signatures):
            for n in sig.needles:
                index.setdefault(n, []).append(i)
        object.__setattr__(self, "_by_needle", tuple((n, tuple(ix)) for n, ix in index.items()))
        object.__setattr__(self, "_needles_b", tuple(n.encode() for n in index))
        object.__setattr__(self, "_keys_b", tuple(sorted(k.encode() for k in keys)))
        object.__setattr__(self, "echoes", tuple(s for s in self.signatures if s.points_to is not None))
        object.__setattr__(self, "symptoms", tuple(s for s in self.signatures if s.severity is Severity.SYMPTOM))
        object.__setattr__(self, "_seen", Memo(self._shown))
        # What a traceback's exception lines say about it, kept: a server failing requests repeats them.
        object.__setattr__(self, "echo_refs", Memo(self._echo_refs))
        object.__setattr__(self, "shows_symptom", Memo(self._shows_symptom))

    def __hash__(self) -> int:
        return self._hash

    def by_id(self, sig_id: str) -> Signature | None:
        for sig in self.signatures:
            if sig.id == sig_id:
                return sig
        return None

    def match(self, text: str) -> tuple[Signature, ...]:
        """Every signature shown by ``text``, in catalogue order."""
        if self._gate.search(text) is None:  # most lines: rejected faster than a native call is made
            for word in self._gate_words:
                if word in text:
                    break
            else:
                return ()
        return self._seen(text)

    def matcher(self, native_ok: bool) -> Callable[[str], tuple[Signature, ...]]:
        """``match`` for a parse that asked ``native.available()`` once: with native search its gate is one set
        search of the gate keys (0.6 us a line, whatever its length; the regex and the substring checks cost
        1.2 us on a short line, 8 us on a 350-character exception message)."""
        if not (native_ok and self._keys_b):
            return self.match
        occurs, seen = native.literal_set(self._keys_b).occurs_in, self._seen

        def match(text: str) -> tuple[Signature, ...]:
            return seen(text) if occurs(text.encode()) else ()

        return match

    def _shown(self, text: str) -> tuple[Signature, ...]:
        by_needle, sigs = self._by_needle, self.signatures
        if native.available():  # the needles in one pass; ids are positions in ``_by_needle``
            shown = native.literal_set(self._needles_b).ids_in(text.encode())
        else:
            shown = {k for k, (needle, _) in enumerate(by_needle) if needle in text}
        found = {i for k in shown for i in by_needle[k][1]}
        return tuple(sigs[i] for i in sorted(found) if sigs[i].pattern.search(text) is not None)

    def _echo_refs(self, text: str) -> tuple[str, ...]:
        """The messages ``text`` points back to (``Worker failed with error 'X'`` -> X), per echo signature."""
        refs = (sig.referenced_message(text) for sig in self.echoes)
        return tuple(r for r in refs if r is not None)

    def _shows_symptom(self, text: str) -> bool:
        return any(s.matches(text) for s in self.symptoms)

    def may_match(self, text: str) -> bool:
        """False when no line of ``text`` (one line or many) can show any signature: what ``match`` checks
        first, over a whole block at once."""
        if self._keys_b and native.available():
            return native.literal_set(self._keys_b).occurs_in(text.encode())
        return self._gate.search(text) is not None or any(word in text for word in self._gate_words)

    def funnel_needles(self) -> tuple[str, ...]:
        """Needles that must widen the scanner's funnel."""
        out: list[str] = []
        for sig in self.signatures:
            if sig.funnel:
                out.extend(n for n in sig.needles if n not in out)
        return tuple(out)


_Trie = dict[str, "_Trie"]


def _gate_key(needle: str) -> str:
    """What the gate looks for to let ``needle`` through: the needle from its first capital on, when that is
    long enough (``killed (SIGKILL`` -> ``SIGKILL``): rarer first characters make the gate's regex faster."""
    for i, ch in enumerate(needle):
        if ch.isupper():
            return needle[i:] if len(needle) - i >= 4 else needle
    return needle


def trie_pattern(words: set[str]) -> str:
    """One regex matching any of ``words``, factored by common prefixes (``E(?:rror|RROR)``): Python's ``re``
    tries the alternatives of a flat ``a|b|c`` one by one at every position, a trie's only where the first
    character fits."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: _Trie) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:  # a word ends here: any longer match is optional (the shortest one suffices)
            return ""
        if len(alts) == 1:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    return build(trie)


class CatalogueError(ValueError):
    """The TOML catalogue is malformed (a bug in the data file)."""


def _signature_from(entry: dict[str, Any]) -> Signature:
    try:
        sig_id = str(entry["id"])
        needles = tuple(str(n) for n in entry["needles"])
        if not needles or any(not n for n in needles):
            raise CatalogueError(f"signature {sig_id!r}: needles must be non-empty strings")
        points = entry.get("points_to")
        return Signature(
            id=sig_id,
            severity=Severity(entry["severity"]),
            versions=tuple(str(v) for v in entry.get("versions", ())),
            needles=needles,
            pattern=re.compile(str(entry["pattern"])),
            hint=str(entry["hint"]),
            funnel=bool(entry.get("funnel", True)),
            points_to=re.compile(str(points)) if points else None,
            harmless=bool(entry.get("harmless", False)),
            fatal=bool(entry.get("fatal", False)),
            aftermath=bool(entry.get("aftermath", False)),
            stalls=bool(entry.get("stalls", False)),
            after_stop=bool(entry.get("after_stop", False)),
            ends_serving=bool(entry.get("ends_serving", False)),
            handled=bool(entry.get("handled", False)),
            lived_with=bool(entry.get("lived_with", False)),
            after_cause=bool(entry.get("after_cause", False)),
            failed_before=bool(entry.get("failed_before", False)),
        )
    except (KeyError, ValueError, re.error) as err:
        if isinstance(err, CatalogueError):
            raise
        raise CatalogueError(f"bad signature entry {entry.get('id', '?')!r}: {err}") from err


def parse_catalogue(text: str) -> Catalogue:
    """Build a catalogue from TOML text (``[[signature]]`` tables)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CatalogueError(f"signature catalogue is not valid TOML: {err}") from err
    sigs = tuple(_signature_from(e) for e in data.get("signature", []))
    ids = [s.id for s in sigs]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise CatalogueError(f"duplicate signature ids: {sorted(dupes)}")
    return Catalogue(sigs)


@cache
def load_catalogue() -> Catalogue:
    """The catalogue shipped with eorch (``orchestrator/logparse/signatures.toml``)."""
    text = resources.files("orchestrator.logparse").joinpath("signatures.toml").read_text("utf-8")
    return parse_catalogue(text)


def signature_hint(sig_id: str) -> str | None:
    """The one-line hint for a signature id, or None when the id is unknown."""
    sig = load_catalogue().by_id(sig_id)
    return sig.hint if sig else None
