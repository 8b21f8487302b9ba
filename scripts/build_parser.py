"""Compile the log parser (``orchestrator/logparse``) with mypyc for this interpreter environment.

    .venv/bin/python scripts/build_parser.py [--check]

Writes the extension modules and a stamp (see ``orchestrator/logparse/compiled.py``) to
``<sys.prefix>/eorch-native``, replacing what was there in one rename; does nothing when the build there
already matches the sources.  Needs mypy (the ``dev`` extra) and a C compiler; without them it says so and
exits 1, and eorch goes on with the Python modules.  The compiler's output goes to
``<sys.prefix>/eorch-native-build.log``.  ``--check``: only say whether the build is current (exit 0) or not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["EORCH_COMPILED_PARSER"] = "0"  # this process reads the sources; it never loads a build
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from orchestrator.logparse import compiled

FILES = "files.json"  # what the compiling child leaves in its output directory: module name -> relative path


def compile_into(out: Path) -> None:
    """The child's work: compile every module of ``compiled.compiled_modules()`` into ``out``."""
    os.dup2(2, 1)  # mypyc, setuptools and the C compiler all talk: everything goes to the log
    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    os.chdir(REPO)  # mypyc names the modules from the paths
    sources = [str(Path(*name.split(".")).with_suffix(".py")) for name in compiled.compiled_modules()]
    work = out / "build"
    extensions = mypycify(sources, opt_level="3", target_dir=str(work / "c"))
    setup(name="eorch-logparse-compiled", ext_modules=extensions,
          script_args=["build_ext", "--build-lib", str(out), "--build-temp", str(work / "obj")])
    shutil.rmtree(work)
    files = {}
    for path in out.rglob("*.so"):  # an extension's module name is its file name up to the first dot
        rel = path.relative_to(out)
        files[".".join(rel.parts[:-1] + (path.name.split(".")[0],))] = str(rel)
    (out / FILES).write_text(json.dumps(files))


def install(target: Path) -> str | None:
    """Compile and put the build in ``target``; None, or why it was not built."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is missing: pip install -e '.[dev]'"
    digest = compiled.sources_digest()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".eorch-native-", dir=target.parent))
    log = target.parent / "eorch-native-build.log"
    try:
        with open(log, "w") as out:
            child = subprocess.run([sys.executable, __file__, "--into", str(tmp)], check=False, stdout=out,
                                   stderr=out)
        if child.returncode != 0:
            return f"mypyc or the C compiler failed, see {log}"
        files = json.loads((tmp / FILES).read_text())
        (tmp / FILES).unlink()
        missing = set(compiled.compiled_modules()) - set(files)
        if missing:
            return f"no extension module for {', '.join(sorted(missing))}"
        if compiled.sources_digest() != digest:
            return "the sources changed during the build; run it again"
        stamp = {"digest": digest, "interpreter": compiled.interpreter_tag(), "files": files}
        (tmp / compiled.STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
        old = target.with_name(target.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        return str(exc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say whether the installed build is current")
    ap.add_argument("--into", type=Path, help=argparse.SUPPRESS)  # the compiling child
    args = ap.parse_args()
    if args.into is not None:
        compile_into(args.into)
        return 0
    target = compiled.native_dir()
    if compiled.usable_build(target) is not None:
        print(f"compiled parser: current ({target})")
        return 0
    if args.check:
        print(f"compiled parser: missing or stale ({target}); run: {sys.executable} scripts/build_parser.py")
        return 1
    why = install(target)
    if why is not None:
        print(f"compiled parser: not built ({why}); eorch uses the Python parser (same verdicts, slower)")
        return 1
    print(f"compiled parser: built {len(compiled.compiled_modules())} modules into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
