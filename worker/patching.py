"""Patch sets on the host: a strict unified-diff engine and all-or-nothing apply/revert. Stdlib only.

A patch set arrives as JSON: ``{"name", "distribution", "versions", "files": [{"path", "sha256_before",
"sha256_after"}], "diffs": [text, ...]}``. Paths are relative to the directory holding the top-level package
(site-packages). The target interpreter resolves that directory (``worker.fingerprint.probe``), so the files
changed are the files that interpreter imports.

Rules: hunks apply at their stated line with exact context (no fuzz, no offset); every result must hash to
``sha256_after``; all new contents are written to temporary files first, then renamed into place; the
originals are kept under ``ROOT/patches/<set>/<timestamp>/``; any failure restores every file already
replaced. A second apply (or revert) is a no-op, reported as such.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from worker import fingerprint
from worker.unidiff import FileDiff, PatchFailed, apply_hunks, parse_diff, sha256_bytes

__all__ = ["PatchFailed", "applied_files", "apply_hunks", "op", "parse_diff", "run"]

SET_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


# --------------------------------------------------------------------------------------- the transaction


@dataclass
class Target:
    path: str  # relative, as in the manifest
    abs_path: str
    before: str
    after: str
    current: str | None  # sha256 now, None if missing
    diff: FileDiff

    @property
    def state(self) -> str:
        if self.current is None:
            return "missing"
        return {self.before: "original", self.after: "patched"}.get(self.current, "changed")


def _load_set(patch_set: dict[str, Any]) -> tuple[str, dict[str, FileDiff], list[dict[str, str]]]:
    name = str(patch_set.get("name", ""))
    if not SET_NAME_RE.match(name):
        raise PatchFailed(f"bad patch set name {name!r}")
    diffs: dict[str, FileDiff] = {}
    for k, text in enumerate(patch_set.get("diffs", [])):
        for fd in parse_diff(text, source=f"#{k + 1} of {name}"):
            if fd.path in diffs:
                raise PatchFailed(f"{name}: {fd.path} appears in two diffs")
            diffs[fd.path] = fd
    files = list(patch_set.get("files", []))
    listed = {f["path"] for f in files}
    if not files:
        raise PatchFailed(f"{name}: the manifest lists no files")
    if listed != set(diffs):
        raise PatchFailed(f"{name}: manifest files {sorted(listed)} and diff files {sorted(diffs)} differ")
    for f in files:
        if f["path"].startswith("/") or ".." in f["path"].split("/"):
            raise PatchFailed(f"{name}: file path must be relative and inside the package: {f['path']}")
    return name, diffs, files


def _resolve(python: str, patch_set: dict[str, Any], force: bool) -> tuple[dict[str, Any], list[Target]]:
    name, diffs, files = _load_set(patch_set)
    dist = str(patch_set.get("distribution", ""))
    probe = fingerprint.probe(python, dists=[dist], files=[f["path"] for f in files])
    version = probe["dists"].get(dist)
    if version is None:
        raise PatchFailed(f"{name}: distribution {dist!r} is not installed for {python} "
                          f"({probe['executable']}); nothing changed")
    versions = list(patch_set.get("versions", []))
    if version not in versions and not force:
        raise PatchFailed(f"{name}: made for {dist} {', '.join(versions)} but {probe['executable']} has "
                          f"{dist} {version} (use --force to apply anyway); nothing changed")
    targets = []
    for f in files:
        found = probe["files"][f["path"]]
        if found.get("error"):
            raise PatchFailed(f"{name}: cannot resolve {f['path']} with {python}: {found['error']}; nothing changed")
        targets.append(Target(f["path"], found["path"], f["sha256_before"], f["sha256_after"],
                              found.get("sha256"), diffs[f["path"]]))
    context = {"python": python, "executable": probe["executable"], "prefix": probe["prefix"],
               "distribution": dist, "version": version, "forced": version not in versions}
    return context, targets


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _plan(targets: list[Target], name: str, *, reverse: bool) -> dict[str, bytes]:
    """New contents for every target still to change, each verified against the manifest hash."""
    new: dict[str, bytes] = {}
    for t in targets:
        if t.state == "missing":
            raise PatchFailed(f"{name}: target file {t.path} does not exist at {t.abs_path}; nothing changed")
        if t.state == "changed":
            raise PatchFailed(f"{name}: {t.abs_path} matches neither the original nor the patched sha256 "
                              f"(stale patch or local edits: sha256 {t.current}); nothing changed")
        if t.state == ("original" if reverse else "patched"):
            continue
        data = _read(t.abs_path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise PatchFailed(f"{name}: {t.abs_path} is not UTF-8 text; nothing changed") from err
        result = apply_hunks(text, t.diff, reverse=reverse).encode("utf-8")
        want = t.before if reverse else t.after
        if sha256_bytes(result) != want:
            raise PatchFailed(f"{name}: {'reverting' if reverse else 'patching'} {t.path} gives sha256 "
                              f"{sha256_bytes(result)}, manifest says {want}; nothing changed")
        new[t.abs_path] = result
    return new


def _check_writable(paths: list[str]) -> None:
    for d in sorted({os.path.dirname(p) for p in paths}):
        mode = os.stat(d).st_mode
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):  # root ignores modes; we do not
            raise PatchFailed(f"directory is read-only ({stat.filemode(mode)}): {d}; nothing changed")
        if not os.access(d, os.W_OK):
            raise PatchFailed(f"no permission to write in {d}; nothing changed")


def _write_temp(target: str, data: bytes) -> str:
    tmp = f"{os.path.join(os.path.dirname(target), '.' + os.path.basename(target))}.eorch-{os.getpid()}"
    st = os.stat(target)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, stat.S_IMODE(st.st_mode))
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
        os.chown(tmp, st.st_uid, st.st_gid)
    return tmp


def _drop_bytecode(path: str) -> None:
    """Remove cached bytecode so the interpreter recompiles even if size and mtime second coincide."""
    cache = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0] + "."
    if os.path.isdir(cache):
        for entry in os.listdir(cache):
            if entry.startswith(stem) and entry.endswith(".pyc"):
                os.unlink(os.path.join(cache, entry))


def _swap_all(new: dict[str, bytes], originals: dict[str, bytes]) -> None:
    """Replace every file or none: temp files first, then renames; undo the renames on any error."""
    temps: dict[str, str] = {}
    replaced: list[str] = []
    try:
        _check_writable(list(new))
        for path, data in new.items():
            temps[path] = _write_temp(path, data)
        for path, tmp in temps.items():
            os.rename(tmp, path)
            replaced.append(path)
            _drop_bytecode(path)
    except OSError as err:
        restore_errors = []
        for path in replaced:
            try:
                os.rename(_write_temp(path, originals[path]), path)
                _drop_bytecode(path)
            except OSError as undo_err:
                restore_errors.append(f"{path}: {undo_err}")
        for tmp in temps.values():
            if os.path.exists(tmp):
                os.unlink(tmp)
        where = f"{err.strerror or err}: {err.filename or ''}".strip()
        if restore_errors:
            raise PatchFailed(f"failed ({where}) and could not restore {'; '.join(restore_errors)} — "
                              "restore these from the backup directory") from err
        done = f"{len(replaced)} of {len(new)} files were replaced and restored" if replaced else "nothing changed"
        raise PatchFailed(f"failed ({where}); rolled back, {done}") from err


def _file_report(targets: list[Target]) -> list[dict[str, Any]]:
    return [{"path": t.path, "abs_path": t.abs_path, "sha256": t.current, "state": t.state} for t in targets]


def _set_state(targets: list[Target]) -> str:
    states = {t.state for t in targets}
    if states == {"patched"}:
        return "applied"
    if states == {"original"}:
        return "not-applied"
    return "partial" if states == {"original", "patched"} else "conflict"


def _lock(root: str) -> int:
    os.makedirs(os.path.join(root, "patches"), exist_ok=True)
    fd = os.open(os.path.join(root, "patches", ".lock"), os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _record_applied(root: str, prefix: str, name: str, targets: list[Target] | None) -> None:
    """ROOT/patches/applied.json: per interpreter prefix, the sets applied and their files (for fingerprints)."""
    path = os.path.join(root, "patches", "applied.json")
    try:
        data = json.loads(_read(path))
    except (OSError, ValueError):
        data = {}
    sets = data.setdefault(prefix, {})
    if targets is None:
        sets.pop(name, None)
    else:
        sets[name] = {"files": {t.path: t.after for t in targets}, "applied_at": time.time()}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.rename(tmp, path)


def applied_files(root: str, prefix: str) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(_read(os.path.join(root, "patches", "applied.json")))
    except (OSError, ValueError):
        return {}
    return {name: info["files"] for name, info in data.get(prefix, {}).items()}


def _backup(root: str, name: str, context: dict[str, Any], targets: list[Target], action: str) -> str:
    parent = os.path.join(root, "patches", name)
    os.makedirs(parent, exist_ok=True)
    base = tempfile.mkdtemp(prefix=time.strftime("%Y%m%dT%H%M%S-") + action + "-", dir=parent)
    os.makedirs(os.path.join(base, "files"))
    for t in targets:
        dest = os.path.join(base, "files", t.path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(_read(t.abs_path))
    with open(os.path.join(base, "record.json"), "w") as f:
        json.dump({"action": action, **context, "files": _file_report(targets)}, f, indent=1)
    return base


def run(action: str, root: str, python: str, patch_set: dict[str, Any], force: bool = False) -> dict[str, Any]:
    """check | status | apply | revert one patch set for one interpreter; returns a report or raises."""
    if action not in ("check", "status", "apply", "revert"):
        raise PatchFailed(f"unknown patch action {action!r}")
    root = os.path.abspath(os.path.expanduser(root))
    fd = _lock(root)
    try:
        context, targets = _resolve(python, patch_set, force or action == "status")
        name = str(patch_set["name"])
        report: dict[str, Any] = {"set": name, "action": action, **context, "state_before": _set_state(targets),
                                  "files_before": _file_report(targets)}
        if action == "status":
            return {**report, "state": report["state_before"], "files": report["files_before"]}
        reverse = action == "revert"
        new = _plan(targets, name, reverse=reverse)
        report["changes"] = sorted(t.path for t in targets if t.abs_path in new)
        if action == "check":
            return {**report, "ok": True, "would": "change" if new else "nothing (already done)"}
        if not new:
            return {**report, "changed": False, "state": report["state_before"], "files": report["files_before"],
                    "note": f"already {'reverted' if reverse else 'applied'}: nothing to do"}
        originals = {t.abs_path: _read(t.abs_path) for t in targets if t.abs_path in new}
        report["backup"] = _backup(root, name, context, targets, action)
        _swap_all(new, originals)
        after = _verify(python, patch_set, targets, want="before" if reverse else "after")
        if after is not None:
            _swap_all(originals, {p: new[p] for p in originals})
            raise PatchFailed(f"{name}: after {action}, {python} imports {after}; rolled back")
        _record_applied(root, context["prefix"], name, None if reverse else targets)
        _, final = _resolve(python, patch_set, True)
        return {**report, "changed": True, "state": _set_state(final), "files": _file_report(final)}
    finally:
        os.close(fd)


def _verify(python: str, patch_set: dict[str, Any], targets: list[Target], want: str) -> str | None:
    """Ask the interpreter again which files it imports and hash them; a problem as text, else None."""
    probe = fingerprint.probe(python, dists=[], files=[t.path for t in targets])
    for t in targets:
        found = probe["files"][t.path]
        expected = t.before if want == "before" else t.after
        if found.get("path") != t.abs_path or found.get("sha256") != expected:
            return f"{found.get('path')} with sha256 {found.get('sha256')} (expected {expected})"
    return None


def op(action: str, root: str, python: str, patch_set: dict[str, Any], force: bool = False) -> dict[str, Any]:
    """The ``patch`` operation of worker.ops: ``run`` with failures as OpError (shown to the user)."""
    from worker.ops import OpError

    try:
        return run(action, root, python, patch_set, force)
    except (PatchFailed, fingerprint.ProbeFailed) as err:
        raise OpError(str(err)) from err
