"""Tracebacks as other front ends print them: a debugger's pop-up and IPython's (Jupyter's) report.

People paste these into issue threads as often as a log: vLLM's ``LLM(...)`` run in a notebook, a training
script stopped in VS Code.  Both differ from Python's own in their first line:

* VS Code (debugpy): ``Exception has occurred: ValueError`` (at times with ``(note: full exception trace is
  shown but execution is paused at: <module>)``), the message on the next lines, then the frames, innermost
  first, and no exception line at the end;
* IPython / Jupyter: a rule of dashes, then ``ValueError      Traceback (most recent call last)`` (no colon),
  frames as ``Cell In[4], line 3`` / ``File /path/x.py:177, in f(...)`` (IPython 8) or
  ``<ipython-input-4-...> in <module>`` / ``/path/x.py in f(...)`` (IPython 7), each with its source lines
  behind a line-number gutter (``----> 3 llm = LLM(...)``), blank lines between frames, and Python's
  exception line at the end.

Ray's wrapper of a remote worker's exception (``ray.exceptions.RayTaskError(ValueError): ray::Worker.f() (pid=N,
ip=...)``) is not a traceback's first line either, but a paste that begins there holds one: the worker's frames
follow, then its exception line.

A Rust panic (sglang-router and its model gateway, HF tokenizers, a Rust extension) is read the same way:
``thread 'main' panicked at src/router.rs:589:79:`` with its message on the next line (Rust >= 1.73; older ones
wrote ``panicked at 'message', src/x.rs:5:9`` on one), then ``note: run with `RUST_BACKTRACE=1` ...`` or its
``stack backtrace:``.
"""

from __future__ import annotations

import re

_DEBUGGER_RE = re.compile(r"^Exception has occurred: (?P<exc>[A-Za-z_][\w.]*)(?:\s|$)")
_REMOTE_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)*RayTaskError\([A-Za-z_][\w.]*\): ")
#: rpyc's banner over the traceback of the exception raised on the other side of the connection.
_REMOTE_BANNER_RE = re.compile(r"=+ Remote Traceback \(\d+\) =+\s*$")
#: IPython's frame line (8.x): ``File ~/.../loader.py:127, in _initialize_model(vllm_config, prefix)``, a module's
#: without ``, in``, a notebook cell's ``Cell In[3], line 5`` (Databricks': ``File <command-8946128544>, line 3``);
#: its context lines follow (``--> 127 ...``).
IPYTHON_FRAME = re.compile(r"^(?:File (?:~|/|[A-Za-z]:\\)\S*\.py:\d+(?:, in \S.*)?|Cell In ?\[\d+\], line \d+"
                           r"|File <command-\d+>, line \d+)$")
#: The needles that find IPython's frame lines (``rules._classify``).
IPYTHON_FRAME_NEEDLES = ("File ~", "File /", "Cell In", "File <command-")
_IPYTHON_RE = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)\s*$")  # 1 blank: flattened


_PANIC_RE = re.compile(r"^thread '[^']*' panicked at \S")
#: What follows a panic's message: the note on how to see its stack, or the stack and its frames.
PANIC_TAIL = ("note: run with `RUST_BACKTRACE=", "note: Some details are omitted", "stack backtrace:")
#: A frame of a panic's ``stack backtrace:``: ``  12: tokio::runtime::...`` (its number may have been read as
#: ``srun --label``'s: then the symbol alone) and ``at src/x.rs:5:9`` under it.
_PANIC_FRAME_RE = re.compile(r"^\s*(?:\d+: |at \S)|^\s*[A-Za-z_<][\w<>{}]*(?:::\S*|$)")


def is_rust_panic(message: str) -> bool:
    """Rust's ``thread 'NAME' panicked at ...`` line."""
    return message.startswith("thread '") and _PANIC_RE.match(message) is not None


#: A Python exception a panic's message quotes last (PyO3 shows a ``PyErr`` as ``AttributeError: msg``): the
#: Rust host called Python, which raised it.
_QUOTED_PY_ERROR_RE = re.compile(r"(?:^|[\s:])(?P<exc>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): \S")


def quoted_python_error(message: str) -> str | None:
    """The Python exception a panic's message ends by quoting (``... the correct venv? AttributeError: class
    must define ...``), which the panic only reports, else None."""
    at = message.find(" panicked at ")
    found = None
    for found in _QUOTED_PY_ERROR_RE.finditer(message, at + 1 if at >= 0 else 0):
        pass
    return None if found is None else found.group("exc")


def is_panic_frame(message: str) -> bool:
    """A frame of a panic's ``stack backtrace:`` (``  12: tokio::runtime::...`` and its ``at src/x.rs:5:9``)."""
    return _PANIC_FRAME_RE.match(message) is not None


def debugger_exception(message: str) -> str | None:
    """The exception a debugger's ``Exception has occurred: X`` line names, else None."""
    if not message.startswith("Exception has occurred: "):
        return None
    m = _DEBUGGER_RE.match(message)
    return None if m is None else m.group("exc")


def is_ipython_header(message: str) -> bool:
    """IPython's first line of a traceback: the exception's name, padded, then ``Traceback (most recent call
    last)``."""
    return ipython_exception(message) is not None


def ipython_exception(message: str) -> str | None:
    """The exception IPython's header names (a report cut before its exception line still says which)."""
    if not message.endswith(("(most recent call last)", "(most recent call last) ")):
        return None
    m = _IPYTHON_RE.match(message)
    return None if m is None else m.group("exc")


def is_rule(message: str) -> bool:
    """IPython's rule of dashes above a traceback (and above the next one of a chain)."""
    text = message.strip()
    return len(text) >= 20 and text.strip("-") == ""


def is_remote_exception(message: str) -> bool:
    """Ray's line for an exception raised in a remote worker: ``ray.exceptions.RayTaskError(ValueError): ...``."""
    return "RayTaskError(" in message and _REMOTE_RE.match(message) is not None


def is_remote_banner(message: str) -> bool:
    """rpyc's line between a proxied exception and the remote side's traceback, in the exception's message:
    ``========= Remote Traceback (1) =========``."""
    return message[:1] == "=" and _REMOTE_BANNER_RE.match(message) is not None
