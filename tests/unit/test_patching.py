"""The host-side diff engine and its all-or-nothing transactions, on temp dirs with a real interpreter."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.patching import PatchFailed, apply_hunks, parse_diff, run

ORIGINAL_A = "".join(f"line {i}\n" for i in range(1, 31))
PATCHED_A = ORIGINAL_A.replace("line 3\n", "line three\n").replace("line 25\n", "line 25\nline 25b\n")
ORIGINAL_B = "def version():\n    return 'old'\n"
PATCHED_B = "def version():\n    return 'new'\n"


def sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def udiff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def gnu_diff(tmp: Path, path: str, before: str, after: str) -> str:
    (tmp / "x").write_text(before)
    (tmp / "y").write_text(after)
    out = subprocess.run(["diff", "-u", "--label", f"a/{path}", "--label", f"b/{path}", str(tmp / "x"),
                          str(tmp / "y")], capture_output=True, text=True, check=False)
    assert out.returncode == 1, out.stderr
    return out.stdout


class TestParseDiff:
    def test_reads_several_files_and_hunks(self) -> None:
        """A multi-file diff gives one FileDiff per file with a/ b/ prefixes stripped."""
        text = "diff --git a/p/a.py b/p/a.py\nindex 1..2\n" + udiff("p/a.py", ORIGINAL_A, PATCHED_A) + udiff(
            "p/b.py", ORIGINAL_B, PATCHED_B)
        files = parse_diff(text)
        assert [f.path for f in files] == ["p/a.py", "p/b.py"]
        assert len(files[0].hunks) == 2

    @pytest.mark.parametrize(("text", "message"), [
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n", "hunk says -2 +2 lines but has -2 +1"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @\n-a\n+b\n", "bad hunk header"),
        ("--- a/x\n@@ -1 +1 @@\n-a\n+b\n", "not followed by '+++ '"),
        ("@@ -1 +1 @@\n-a\n+b\n", "before a '--- ' file header"),
        ("just some text\n", "no '--- '/'+++ ' file header"),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n+c\n", "unexpected line in hunk"),
        ("--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n", "creating or deleting files is not supported"),
        ("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "renames are not supported"),
        ("--- a/x\n+++ b/x\n", "no hunk for x"),
    ])
    def test_malformed_diffs_are_refused_with_the_line(self, text: str, message: str) -> None:
        """Every irregularity is an error naming what is wrong; nothing is guessed."""
        with pytest.raises(PatchFailed, match="malformed diff") as err:
            parse_diff(text)
        assert message in str(err.value)


class TestApplyHunks:
    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "def f():\n", "    pass\n"]), max_size=25),
           st.lists(st.sampled_from(["a\n", "b\n", "x\n", "\n", "    return 1\n"]), max_size=25))
    def test_difflib_diffs_round_trip(self, before: list[str], after: list[str]) -> None:
        """Any diff difflib writes applies exactly, and applies in reverse back to the original."""
        a, b = "".join(before), "".join(after)
        if a == b:
            return
        (fd,) = parse_diff(udiff("f.py", a, b))
        assert apply_hunks(a, fd) == b
        assert apply_hunks(b, fd, reverse=True) == a

    def test_no_newline_at_end_of_file(self, tmp_path: Path) -> None:
        """GNU diff's '\\ No newline at end of file' markers are honoured both ways."""
        before, after = "one\ntwo", "one\ntwo\nthree"
        (fd,) = parse_diff(gnu_diff(tmp_path, "f", before, after))
        assert apply_hunks(before, fd) == after
        assert apply_hunks(after, fd, reverse=True) == before

    def test_context_mismatch_is_refused_not_fuzzed(self) -> None:
        """A file shifted by one line is refused, naming the line, even though the hunk would fit nearby."""
        (fd,) = parse_diff(udiff("f", ORIGINAL_A, PATCHED_A))
        with pytest.raises(PatchFailed, match=r"hunk 1 does not match at line \d+"):
            apply_hunks("extra\n" + ORIGINAL_A, fd)

    def test_hunk_past_the_end(self) -> None:
        """A hunk beyond a truncated file is refused."""
        (fd,) = parse_diff(udiff("f", ORIGINAL_A, PATCHED_A))
        with pytest.raises(PatchFailed, match="hunk 2"):
            apply_hunks("".join(ORIGINAL_A.splitlines(keepends=True)[:20]), fd)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real interpreter (venv without pip) whose site-packages we fill per test."""
    base = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "v")], check=True)
    return base / "v"


@pytest.fixture
def installed(venv: Path) -> Iterator[dict[str, Any]]:
    """Package `mypkg` 1.0 installed in the venv, with files a.py and sub/b.py."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    for name in ("mypkg", "mypkg-1.0.dist-info"):
        shutil.rmtree(site / name, ignore_errors=True)
    (site / "mypkg" / "sub").mkdir(parents=True)
    (site / "mypkg" / "__init__.py").write_text("")
    (site / "mypkg" / "a.py").write_text(ORIGINAL_A)
    (site / "mypkg" / "sub" / "b.py").write_text(ORIGINAL_B)
    (site / "mypkg-1.0.dist-info").mkdir()
    (site / "mypkg-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    yield {"python": str(venv / "bin" / "python"), "site": site, "pkg": site / "mypkg"}
    for p in (site / "mypkg", site / "mypkg" / "sub"):
        subprocess.run(["chattr", "-i", str(p)], check=False, capture_output=True)
        os.chmod(p, 0o755)
    subprocess.run(["chattr", "-i", str(site / "mypkg" / "sub" / "b.py")], check=False, capture_output=True)


def make_set(**overrides: Any) -> dict[str, Any]:
    patch_set = {
        "name": "mypkg-fix", "distribution": "mypkg", "versions": ["1.0"],
        "files": [{"path": "mypkg/a.py", "sha256_before": sha(ORIGINAL_A), "sha256_after": sha(PATCHED_A)},
                  {"path": "mypkg/sub/b.py", "sha256_before": sha(ORIGINAL_B), "sha256_after": sha(PATCHED_B)}],
        "diffs": [udiff("mypkg/a.py", ORIGINAL_A, PATCHED_A), udiff("mypkg/sub/b.py", ORIGINAL_B, PATCHED_B)],
    }
    return {**patch_set, **overrides}


def snapshot(pkg: Path) -> dict[str, str]:
    return {str(p.relative_to(pkg)): sha(p.read_bytes()) for p in sorted(pkg.rglob("*")) if p.is_file()}


class TestTransactions:
    def test_apply_then_reapply_then_revert(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """Apply changes both files; a second apply is a reported no-op; revert restores the exact bytes."""
        root, before = str(tmp_path / "root"), snapshot(installed["pkg"])
        report = run("apply", root, installed["python"], make_set())
        assert report["changed"] and report["state"] == "applied"
        assert (installed["pkg"] / "a.py").read_text() == PATCHED_A
        assert Path(report["backup"], "files", "mypkg", "a.py").read_text() == ORIGINAL_A
        again = run("apply", root, installed["python"], make_set())
        assert again["changed"] is False and "already applied" in again["note"]
        back = run("revert", root, installed["python"], make_set())
        assert back["changed"] and back["state"] == "not-applied"
        assert snapshot(installed["pkg"]) == before

    def test_check_changes_nothing(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """check is a dry run: it reports what would change and leaves files alone."""
        before = snapshot(installed["pkg"])
        report = run("check", str(tmp_path), installed["python"], make_set())
        assert report["changes"] == ["mypkg/a.py", "mypkg/sub/b.py"]
        assert snapshot(installed["pkg"]) == before

    def test_stale_patch_is_refused_and_nothing_changes(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A target that matches neither hash (edited locally, other build) stops the whole set."""
        (installed["pkg"] / "sub" / "b.py").write_text(ORIGINAL_B + "# local edit\n")
        before = snapshot(installed["pkg"])
        with pytest.raises(PatchFailed, match="matches neither the original nor the patched sha256"):
            run("apply", str(tmp_path), installed["python"], make_set())
        assert snapshot(installed["pkg"]) == before

    def test_other_version_is_refused_unless_forced(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A set made for mypkg 2.0 is refused on 1.0; --force applies it and says so."""
        before = snapshot(installed["pkg"])
        with pytest.raises(PatchFailed, match=r"made for mypkg 2\.0 but .* has mypkg 1\.0"):
            run("apply", str(tmp_path), installed["python"], make_set(versions=["2.0"]))
        assert snapshot(installed["pkg"]) == before
        report = run("apply", str(tmp_path), installed["python"], make_set(versions=["2.0"]), force=True)
        assert report["forced"] and report["state"] == "applied"

    def test_missing_target_file(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A file the set names but the package lacks is refused before anything is written."""
        (installed["pkg"] / "sub" / "b.py").unlink()
        before = snapshot(installed["pkg"])
        with pytest.raises(PatchFailed, match="target file mypkg/sub/b.py does not exist"):
            run("apply", str(tmp_path), installed["python"], make_set())
        assert snapshot(installed["pkg"]) == before

    def test_failure_half_way_is_rolled_back(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """When replacing the second file fails (immutable file), the first is restored; no temp files stay."""
        target = installed["pkg"] / "sub" / "b.py"
        if subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False).returncode != 0:
            pytest.fail("chattr +i is needed to make a rename fail half-way (ext4 and root, as in `make test`)")
        before = snapshot(installed["pkg"])
        with pytest.raises(PatchFailed, match=r"rolled back, 1 of 2 files were replaced and restored"):
            run("apply", str(tmp_path), installed["python"], make_set())
        subprocess.run(["chattr", "-i", str(target)], check=True)
        assert snapshot(installed["pkg"]) == before

    def test_read_only_directory(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A read-only package directory is refused (even for root), nothing changed."""
        os.chmod(installed["pkg"] / "sub", 0o555)
        before = snapshot(installed["pkg"])
        with pytest.raises(PatchFailed, match="directory is read-only .* nothing changed"):
            run("apply", str(tmp_path), installed["python"], make_set())
        assert snapshot(installed["pkg"]) == before

    def test_result_hash_must_match_manifest(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A diff that applies but does not produce sha256_after is refused."""
        files = make_set()["files"]
        files[1] = {**files[1], "sha256_after": "0" * 64}
        with pytest.raises(PatchFailed, match="manifest says 0000"):
            run("apply", str(tmp_path), installed["python"], make_set(files=files))

    def test_manifest_and_diffs_must_agree(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """A diff for a file the manifest does not list is refused."""
        with pytest.raises(PatchFailed, match="manifest files .* and diff files .* differ"):
            run("apply", str(tmp_path), installed["python"], make_set(diffs=make_set()["diffs"][:1]))

    def test_bytecode_is_dropped(self, installed: dict[str, Any], tmp_path: Path) -> None:
        """Cached bytecode of a patched module is removed so the new source is what runs."""
        subprocess.run([installed["python"], "-m", "compileall", "-q", str(installed["pkg"] / "sub")], check=True)
        assert list((installed["pkg"] / "sub" / "__pycache__").glob("b.*.pyc"))
        run("apply", str(tmp_path), installed["python"], make_set())
        assert not list((installed["pkg"] / "sub" / "__pycache__").glob("b.*.pyc"))
        out = subprocess.run([installed["python"], "-c", "import mypkg.sub.b as b; print(b.version())"],
                             capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "new"
