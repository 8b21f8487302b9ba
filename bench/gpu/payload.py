"""The device payload: vLLM 0.26.0 + speculators 0.9.0 + hs-connectors + eorch's own dependencies as wheels for
the device's Python 3.12 / torch 2.11.0+cu130, split into pieces that fit one device-tool call each.

    python3 bench/gpu/payload.py resolve      # re-resolve bench/gpu/payload-lock.txt (pip dry run, network)
    python3 bench/gpu/payload.py build        # download the lock's wheels, tar, split into .g0/ … .g6/

``resolve`` runs ``pip install --dry-run --report`` for the device's platform with stand-in wheels for what the
device already has and must not be replaced (torch, torchvision, torchaudio, triton), then leaves out every
package of the device image (``device-packages.txt``) and those vLLM does not need for this job
(``LEFT_OUT``: heavy, imported lazily, or harmful — a cutlass DSL without its CUDA flavour raises
``No CTK flavor installed`` when flashinfer imports it).  ``build`` is deterministic for a given lock: the
tar is written with sorted names and zeroed metadata, its sha256 goes to ``.g0/SHA256``.  The pieces live in
the ignored folders ``.g0/`` … (``.git/info/exclude``); bench/gpu/device.sh reassembles them on the device.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LOCK = HERE / "payload-lock.txt"
WORK = REPO / ".cache" / "gpu-payload"  # ignored (/.cache/)
PIECES = 7  # 7 × ~57 MB + the ~1.7 MB checkout stay under the tool's 64 MiB per call
PLATFORM = ["--python-version", "3.12", "--implementation", "cp", "--only-binary=:all:"] + [
    a for n in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64", "manylinux_2_24_x86_64",
                "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64",
                "manylinux_2_12_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64") for a in ("--platform", n)]
DEVICE_HAS = {"torch": "2.11.0", "torchvision": "0.26.0", "torchaudio": "2.11.0", "triton": "3.6.0"}
WANT = ["vllm==0.26.0", "speculators==0.9.0", "hs-connectors==0.9.0", "transformers==5.17.0",
        # eorch's own dependencies (pyproject.toml): the controller runs on the device too
        "asyncssh>=2.17", "sqlalchemy[asyncio]>=2.0,<2.2", "alembic>=1.13", "typer>=0.12", "rich>=13.7",
        "pydantic>=2.6", "textual>=0.80", "apprise>=1.8", "platformdirs>=4", "tomli-w>=1.0"]
LEFT_OUT = {"tokenspeed-triton", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-core",
            "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-cu13", "nvidia-nvvm", "nvidia-cuda-nvcc",
            "nvidia-cuda-nvdisasm", "tilelang", "pynvvideocodec", "z3-solver", "torchcodec", *DEVICE_HAS}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _stand_in(where: Path, name: str, version: str) -> Path:
    """An empty wheel named like the device's own package, so the resolver takes it as given."""
    path = where / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: eorch\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in files.items():
            z.writestr(arc, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={digest},{len(text)}")
        z.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


def resolve() -> int:
    device = {_norm(line) for line in (HERE / "device-packages.txt").read_text().split() if not line.startswith("#")}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        stand = [f"{n} @ {_stand_in(t, n, v).as_uri()}" for n, v in DEVICE_HAS.items()]
        report = t / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), *PLATFORM, "--target", str(t / "x"), *stand, *WANT], check=True)
        rows = json.loads(report.read_text())["install"]
    keep = sorted({f"{_norm(r['metadata']['name'])}=={r['metadata']['version']}" for r in rows
                   if _norm(r["metadata"]["name"]) not in device | LEFT_OUT})
    LOCK.write_text("# Wheels shipped to the device (payload.py resolve); the device image provides the rest.\n"
                    + "\n".join(keep) + "\n")
    print(f"{len(keep)} wheels in {LOCK.relative_to(REPO)}")
    return 0


def build() -> int:
    wheels = WORK / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    lock = [line for line in LOCK.read_text().splitlines() if line and not line.startswith("#")]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *PLATFORM, "-d", str(wheels),
                    *lock], check=True)
    wanted = {_norm(x.split("==")[0]): x.split("==")[1] for x in lock}
    files = []
    for whl in sorted(wheels.glob("*.whl")):
        name, version = whl.name.split("-")[:2]
        if wanted.get(_norm(name)) == version:
            files.append(whl)
    missing = set(wanted) - {_norm(w.name.split("-")[0]) for w in files}
    if missing:
        print(f"payload: wheels missing after download: {sorted(missing)}", file=sys.stderr)
        return 1
    tar_path = WORK / "payload.tar"
    with tarfile.open(tar_path, "w", format=tarfile.GNU_FORMAT) as tar:
        for whl in files:
            info = tar.gettarinfo(str(whl), arcname=f"wheels/{whl.name}")
            info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
            with open(whl, "rb") as f:
                tar.addfile(info, f)
    data = tar_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    size = -(-len(data) // PIECES)
    for i in range(8):
        shutil.rmtree(REPO / f".g{i}", ignore_errors=True)
    for i in range(PIECES):
        piece = REPO / f".g{i}"
        piece.mkdir()
        (piece / f"payload.part{i}").write_bytes(data[i * size:(i + 1) * size])
    (REPO / ".g0" / "SHA256").write_text(f"{digest}  payload.tar\n")
    print(json.dumps({"wheels": len(files), "bytes": len(data), "sha256": digest, "pieces": PIECES,
                      "piece_bytes": size}))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["resolve", "build"])
    a = ap.parse_args(argv)
    return resolve() if a.action == "resolve" else build()


if __name__ == "__main__":
    raise SystemExit(main())
