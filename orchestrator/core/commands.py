"""Every command eorch runs on a host, as argv; ``shell`` is the one place argv becomes shell text.

Pure: no I/O. The SSH transport sends ``shell(argv)`` to the remote login shell; the local transport
executes argv directly. Nothing else in eorch concatenates shell text.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from worker import boot

# Runs on the host with its python3: unpack a worker tarball (stdin) into DEST atomically, once.
_UNPACK_WORKER = """\
import io, os, sys, tarfile
dest = sys.argv[1]
data = sys.stdin.buffer.read()
if os.path.isdir(dest):
    print("present"); sys.exit(0)
tmp = dest + ".tmp-" + str(os.getpid())
os.makedirs(tmp)
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
    tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)
try:
    os.rename(tmp, dest)
except OSError:
    import shutil; shutil.rmtree(tmp, ignore_errors=True)
print("uploaded")
"""


def shell(argv: Sequence[str]) -> str:
    """The shell text for argv: every word quoted, so no argument is ever interpreted by the shell."""
    if not argv:
        raise ValueError("empty argv")
    return shlex.join(argv)


# Runs on the host before the worker is there: the absolute root, with its runs/ dir made.
_RESOLVE_ROOT = (
    "import json,os,sys\nif sys.version_info<(3,8):sys.exit('eorch needs Python >= 3.8 on the host, this is '"
    "+sys.version.split()[0]+'; choose one with `eorch host add --python`')\n"
    "r=os.path.abspath(os.path.expanduser(sys.argv[1]));"
    "os.makedirs(os.path.join(r,'runs'),exist_ok=True);print(json.dumps({'root':r}))"
)


# Every python started on a host gets -I (worker/boot.py says why): nothing in the login directory, the
# user's PYTHONPATH or user site can replace a module eorch imports.
def resolve_root(python: str, root: str) -> list[str]:
    return [python, "-I", "-c", _RESOLVE_ROOT, root]


def unpack_worker(python: str, dest: str) -> list[str]:
    return [python, "-I", "-c", _UNPACK_WORKER, dest]


def worker(python: str, worker_dir: str, *args: str) -> list[str]:
    """Run ``worker.cli`` from the uploaded copy at worker_dir, isolated from the cwd and environment."""
    return boot.argv(python, worker_dir, "worker.cli", *args)


def worker_call(python: str, worker_dir: str, op: str, args: dict[str, Any]) -> list[str]:
    return worker(python, worker_dir, "call", op, json.dumps(args))


def worker_agent(python: str, worker_dir: str) -> list[str]:
    return worker(python, worker_dir, "agent")


def follow_file(path: str, offset: int) -> list[str]:
    """Stream a file from byte ``offset`` (0-based) on, following appends (GNU tail, inotify)."""
    return ["tail", "-c", f"+{offset + 1}", "-F", path]


def whole_file(path: str) -> list[str]:
    return ["cat", path]


def readable(path: str) -> list[str]:
    return ["test", "-r", path]


def last_lines(path: str, lines: int) -> list[str]:
    return ["tail", "-n", str(lines), path]


def request_retry(run_dir: str) -> list[str]:
    """Create RUN_DIR/retry: a recipe waiting on its kept server runs the client again (worker/recipes/warmserver.py)."""
    return ["touch", f"{run_dir}/retry"]

