"""Patch sets and environment fingerprints, on the controller side.

A patch set is a directory: ``manifest.toml`` (validated here) plus the unified diffs it names. It is sent
whole, as JSON, to the host's worker (``worker.patching``), which does the work; every action is recorded in
``patch_actions`` whether it succeeded or not. Fingerprints (``worker.fingerprint``) are stored on runs; runs
whose patched files no longer hash as recorded are flagged.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.context import Context
from orchestrator.core.humanize import iso
from orchestrator.errors import NotFound, PatchError, RemoteOpFailed
from orchestrator.store.db import Session
from orchestrator.store.queries import add_event, add_patch_action, runs_with_patch_set, utcnow
from worker.patching import PatchFailed, parse_diff

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "deploy" / "patches"
SHA256 = r"^[0-9a-f]{64}$"
ACTIONS = ("check", "status", "apply", "revert")


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(pattern=r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
    diff: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sha256_before: str = Field(pattern=SHA256)
    sha256_after: str = Field(pattern=SHA256)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    description: str = ""
    distribution: str = Field(min_length=1)
    versions: list[str] = Field(min_length=1)
    files: list[FileEntry] = Field(min_length=1)


@dataclass(frozen=True)
class PatchSet:
    manifest: Manifest
    directory: Path
    diffs: dict[str, str]  # diff file name → text

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def files(self) -> dict[str, str]:
        """path → sha256 after patching."""
        return {f.path: f.sha256_after for f in self.manifest.files}

    def payload(self) -> dict[str, Any]:
        """What the worker needs: the manifest's facts and the diff texts."""
        m = self.manifest
        return {"name": m.name, "distribution": m.distribution, "versions": m.versions,
                "files": [{"path": f.path, "sha256_before": f.sha256_before, "sha256_after": f.sha256_after}
                          for f in m.files],
                "diffs": [self.diffs[name] for name in sorted(self.diffs)]}


def resolve_dir(ref: str) -> Path:
    """A patch-set directory given as a path, or the name of one shipped under deploy/patches/."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return path
    if "/" not in ref and (BUILTIN_DIR / ref).is_dir():
        return BUILTIN_DIR / ref
    shipped = ", ".join(sorted(p.name for p in BUILTIN_DIR.iterdir() if p.is_dir())) if BUILTIN_DIR.is_dir() else ""
    raise NotFound(f"no patch set {ref!r}: give a directory with a manifest.toml, or one of: {shipped or 'none'}")


def load_patch_set(ref: str) -> PatchSet:
    """Read and validate a patch set; a bad manifest or a malformed diff is a PatchError naming the problem."""
    directory = resolve_dir(ref)
    manifest_path = directory / "manifest.toml"
    try:
        raw = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise PatchError(f"{directory}: no manifest.toml") from err
    except UnicodeDecodeError:
        raise PatchError(f"{manifest_path}: not UTF-8 text; save it as UTF-8") from None
    except tomllib.TOMLDecodeError as err:
        raise PatchError(f"{manifest_path}: invalid TOML: {err}") from err
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PatchError(f"{manifest_path}: {where}: {first['msg']}") from err
    diffs: dict[str, str] = {}
    sections: dict[str, str] = {}
    for entry in manifest.files:
        if entry.diff not in diffs:
            try:
                diffs[entry.diff] = (directory / entry.diff).read_text(encoding="utf-8")
            except OSError as err:
                raise PatchError(f"{manifest_path}: diff {entry.diff} unreadable: {err.strerror}") from err
            except UnicodeDecodeError:
                raise PatchError(f"{manifest_path}: diff {entry.diff} is not UTF-8 text") from None
            try:
                for fd in parse_diff(diffs[entry.diff], source=str(directory / entry.diff)):
                    sections[fd.path] = entry.diff
            except PatchFailed as err:
                raise PatchError(str(err)) from err
        if sections.get(entry.path) != entry.diff:
            raise PatchError(f"{manifest_path}: {entry.diff} has no section for {entry.path}")
    extra = set(sections) - {f.path for f in manifest.files}
    if extra:
        raise PatchError(f"{manifest_path}: diffs change files the manifest does not list: {sorted(extra)}")
    return PatchSet(manifest, directory, diffs)


def record_action(s: Session, host: str, python: str, patch_set: PatchSet, action: str, ok: bool,
                  details: dict[str, Any]) -> None:
    add_patch_action(s, host=host, python=python, patch_set=patch_set.name, action=action, ok=ok,
                     details={**details, "manifest_files": patch_set.files})


async def patch_action(ctx: Context, host: str, python: str, patch_set: PatchSet, action: str,
                       force: bool = False) -> dict[str, Any]:
    """Run one action on the host and record it; a refusal is recorded too, then raised as PatchError."""
    if action not in ACTIONS:
        raise PatchError(f"unknown patch action {action!r}")
    session = await ctx.session(host)
    args = {"action": action, "root": session.root, "python": python, "patch_set": patch_set.payload(),
            "force": force}
    # One-shot calls carry their JSON in argv (128 KiB per argument on Linux); big sets go over the agent.
    call = session.call_once if len(json.dumps(args)) < 100_000 else session.call
    try:
        report = await call("patch", **args)
    except RemoteOpFailed as err:
        with ctx.db() as s:
            record_action(s, host, python, patch_set, action, False, {"error": str(err)})
        raise PatchError(str(err)) from err
    with ctx.db() as s:
        record_action(s, host, python, patch_set, action, True, report)
        flag_changed_runs(s, host, report)
    return report


def current_hashes(report: dict[str, Any]) -> dict[str, str | None]:
    return {f["path"]: f["sha256"] for f in report.get("files") or report.get("files_before") or []}


def flag_changed_runs(s: Session, host: str, report: dict[str, Any]) -> list[str]:
    """Mark runs on host that ran this set with this interpreter and whose files now hash differently."""
    now_hashes = current_hashes(report)
    flagged = []
    for run in runs_with_patch_set(s, host):
        ps = run.patch_set or {}
        if ps.get("name") != report.get("set") or ps.get("executable") != report.get("executable"):
            continue
        changed = {p: now_hashes.get(p) for p, h in (ps.get("files") or {}).items()
                   if p in now_hashes and now_hashes[p] != h}
        if changed and ps.get("changed_since", {}).get("files") != changed:
            run.patch_set = {**ps, "changed_since": {"at": iso(utcnow()),
                                                     "files": changed}}
            add_event(s, run.id, "patch_changed", {"set": ps.get("name"), "files": changed})
            flagged.append(run.id)
    return flagged


async def fingerprint(ctx: Context, host: str, python: str, files: list[str] | None = None) -> dict[str, Any]:
    session = await ctx.session(host)
    return await session.call_once("fingerprint", python=python, root=session.root, files=files or [])


def run_pythons(argv: list[str], spec: dict[str, Any] | None, explicit: str | None, default: str) -> list[str]:
    """The interpreter(s) a run uses: --python, else a recipe's engine interpreters, else a python argv[0]."""
    if explicit:
        return [explicit]
    recipe = (spec or {}).get("eagle3") or {}
    found = [recipe[k] for k in ("vllm_python", "speculators_python") if recipe.get(k)]
    if found:
        return list(dict.fromkeys(found))
    if argv and re.match(r"^python[0-9.]*$", argv[0].rsplit("/", 1)[-1]):
        return [argv[0]]
    return [default]


async def prepare_launch(ctx: Context, host: str, pythons: list[str], patch_ref: str | None,
                         apply: bool) -> dict[str, Any]:
    """Before a launch: verify (or apply) the patch set, then fingerprint; the Run columns to store.

    The patch set is checked against the first interpreter and a problem stops the launch. Without a patch
    set, an interpreter that cannot be probed is recorded as an error and the launch goes on.
    """
    python = pythons[0]
    patch_info: dict[str, Any] | None = None
    files: list[str] = []
    if patch_ref:
        patch_set = load_patch_set(patch_ref)
        report = await patch_action(ctx, host, python, patch_set, "status")
        if report["state"] != "applied":
            if not apply:
                raise PatchError(f"patch set {patch_set.name} is {report['state']} on {host} for {python}; "
                                 f"apply it (`eorch patch apply --host {host} --python {python} "
                                 f"{patch_ref}`) or pass --apply-patches")
            report = await patch_action(ctx, host, python, patch_set, "apply")
        files = sorted(patch_set.files)
        patch_info = {"name": patch_set.name, "python": python, "executable": report["executable"],
                      "version": report["version"], "files": current_hashes(report),
                      "verified_at": iso(utcnow())}
    prints: list[dict[str, Any]] = []
    for py in pythons:
        try:
            prints.append(await fingerprint(ctx, host, py, files if py == python else []))
        except RemoteOpFailed as err:
            if patch_ref:
                raise PatchError(str(err)) from err
            prints.append({"python_requested": py, "error": str(err), "versions": {}})
    primary = {**prints[0], "python_requested": python}
    if len(prints) > 1:
        primary["other_interpreters"] = {py: fp for py, fp in zip(pythons[1:], prints[1:])}
    return {"env_fingerprint": primary,
            "vllm_version": next((fp["versions"].get("vllm") for fp in prints if fp["versions"].get("vllm")), None),
            "speculators_version": next((fp["versions"].get("speculators") for fp in prints
                                         if fp["versions"].get("speculators")), None),
            "patch_set": patch_info}
