"""How every eorch worker process starts on a host: ``python3 -I -c BOOT WORKER_ROOT MODULE ARGS...``.

``-I`` (Python >= 3.4) keeps the directory it is started from off ``sys.path`` (``python -m`` and ``-c``
would put it first, so an ``inspect.py`` or ``json.py`` in the login directory replaced the stdlib) and
ignores ``PYTHONPATH`` and the user site, so nothing of the user's can shadow the worker. ``BOOT`` then
puts the uploaded copy on ``sys.path`` itself: no ``PYTHONPATH`` is set, so the jobs the worker starts
inherit the login environment unchanged.
"""

from __future__ import annotations

BOOT = (
    "import sys;sys.path.insert(0,sys.argv[1]);m=sys.argv[2];del sys.argv[1:3];"
    "import runpy;runpy.run_module(m,run_name='__main__',alter_sys=True)"
)

# For a -c snippet that must see the user's PYTHONPATH (probing the job's interpreter): drop the cwd only.
NO_CWD = "import sys\nif sys.path and sys.path[0] in ('', '.'): del sys.path[0]\n"


def argv(python: str, worker_root: str, module: str, *args: str) -> list[str]:
    """Run ``module`` (``worker.cli``, ``worker.wrap``) of the worker copy whose parent dir is worker_root."""
    return [python, "-I", "-c", BOOT, worker_root, module, *args]
