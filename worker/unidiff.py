"""A strict unified-diff reader and applier (stdlib only): exact context at the stated line, no fuzz.

``parse_diff`` turns diff text into ``FileDiff``s, refusing anything irregular with the line number;
``apply_hunks`` applies (or un-applies) one file's hunks to its text, refusing any mismatch.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchFailed(Exception):
    """The patch set cannot be checked/applied/reverted; the message says why and that nothing changed."""


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_lines: tuple[str, ...]  # context and removed lines, with their line endings
    new_lines: tuple[str, ...]  # context and added lines


@dataclass
class FileDiff:
    path: str
    hunks: list[Hunk] = field(default_factory=list)


def _strip_prefix(name: str) -> str:
    name = name.split("\t", 1)[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(text: str, source: str = "diff") -> list[FileDiff]:
    """Parse a unified diff (one or more files); any irregularity is a PatchFailed naming the line."""
    lines = text.splitlines(keepends=True)
    files: list[FileDiff] = []
    i = 0

    def fail(n: int, why: str) -> PatchFailed:
        return PatchFailed(f"malformed diff {source} line {n + 1}: {why}")

    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            if line.startswith(("@@", "+++ ")):
                raise fail(i, f"{line.strip()!r} before a '--- ' file header")
            i += 1  # preamble: 'diff --git', 'index', comments
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise fail(i + 1, "'--- ' header not followed by '+++ '")
        old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:])
        if "/dev/null" in (old, new):
            raise fail(i, f"creating or deleting files is not supported ({old} → {new})")
        if old != new:
            raise fail(i, f"renames are not supported ({old} → {new})")
        current = FileDiff(new)
        files.append(current)
        i += 2
        if i >= len(lines) or not lines[i].startswith("@@"):
            raise fail(i, f"no hunk for {new}")
        while i < len(lines) and lines[i].startswith("@@"):
            match = HUNK_RE.match(lines[i])
            if not match:
                raise fail(i, f"bad hunk header {lines[i].strip()!r}")
            old_start, new_start = int(match.group(1)), int(match.group(3))
            old_count = int(match.group(2)) if match.group(2) is not None else 1
            new_count = int(match.group(4)) if match.group(4) is not None else 1
            header_at = i
            i += 1
            old_lines: list[str] = []
            new_lines: list[str] = []
            while i < len(lines) and (len(old_lines) < old_count or len(new_lines) < new_count):
                body = lines[i]
                if body.startswith(("@@", "diff ")):
                    break  # the next hunk or file began early: the count check below names the problem
                tag, content = body[:1], body[1:]
                if body in ("\n", "\r\n"):  # an empty context line whose space was stripped by an editor
                    tag, content = " ", body
                if tag == " ":
                    old_lines.append(content)
                    new_lines.append(content)
                elif tag == "-":
                    old_lines.append(content)
                elif tag == "+":
                    new_lines.append(content)
                elif tag == "\\":
                    _drop_newline(old_lines, new_lines, lines[i - 1][:1])
                else:
                    raise fail(i, f"unexpected line in hunk: {body.rstrip()!r}")
                i += 1
            if len(old_lines) != old_count or len(new_lines) != new_count:
                raise fail(header_at, f"hunk says -{old_count} +{new_count} lines but has "
                                      f"-{len(old_lines)} +{len(new_lines)}")
            if i < len(lines) and lines[i].startswith("\\"):
                _drop_newline(old_lines, new_lines, lines[i - 1][:1])
                i += 1
            if new_count and new_start == 0 or (old_count and old_start == 0):
                raise fail(header_at, "line 0 in a hunk with lines")
            current.hunks.append(Hunk(old_start, tuple(old_lines), tuple(new_lines)))
    if not files:
        raise PatchFailed(f"malformed diff {source}: no '--- '/'+++ ' file header found")
    return files


def _drop_newline(old_lines: list[str], new_lines: list[str], tag: str) -> None:
    """'\\ No newline at end of file' applies to the line just before it."""
    targets = {" ": (old_lines, new_lines), "-": (old_lines,), "+": (new_lines,)}.get(tag, ())
    for seq in targets:
        if seq:
            seq[-1] = seq[-1].rstrip("\r\n")


def apply_hunks(text: str, diff: FileDiff, *, reverse: bool = False) -> str:
    """Apply (or un-apply) a file's hunks at their exact positions; a mismatch is a PatchFailed."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # index in `lines` of the next line not yet copied
    for n, hunk in enumerate(diff.hunks, 1):
        want, put = (hunk.new_lines, hunk.old_lines) if reverse else (hunk.old_lines, hunk.new_lines)
        start = _hunk_start(diff, hunk, reverse)
        if start < pos:
            raise PatchFailed(f"{diff.path}: hunk {n} overlaps the previous one")
        got = lines[start:start + len(want)]
        if got != list(want):
            if len(got) < len(want) and got == list(want[:len(got)]):
                raise PatchFailed(f"{diff.path}: hunk {n} runs past the end of the file")
            first = next(k for k, (a, b) in enumerate(zip(got, want)) if a != b)
            raise PatchFailed(f"{diff.path}: hunk {n} does not match at line {start + first + 1}: "
                              f"expected {want[first].rstrip()!r}, found {got[first].rstrip()!r}")
        out.extend(lines[pos:start])
        out.extend(put)
        pos = start + len(want)
    out.extend(lines[pos:])
    return "".join(out)


def _hunk_start(diff: FileDiff, hunk: Hunk, reverse: bool) -> int:
    # The new-side start is derived from the old-side start and earlier hunks' size changes.
    if not reverse:
        return hunk.old_start - 1 if hunk.old_lines else hunk.old_start
    shift = 0
    for earlier in diff.hunks:
        if earlier is hunk:
            break
        shift += len(earlier.new_lines) - len(earlier.old_lines)
    base = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
    return base + shift


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
