"""The warm python: one pre-started interpreter runs the recipe's speculators-env steps in order (real processes)."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import pytest

from worker.recipes.warm import WarmPython

REPO = Path(__file__).resolve().parents[2]

MODULES = {
    "say_pid": "import os, sys\nprint('pid', os.getpid(), 'argv', sys.argv[1:])\n",
    "exit3": "import sys\nsys.exit(3)\n",
    "exit_msg": "raise SystemExit('usage: exit_msg WHAT')\n",
    "boom": "raise RuntimeError('boom in the order')\n",
    "die7": "import os\nos._exit(7)\n",
    "httpx_level": "import logging\nprint('httpx level', logging.getLogger('httpx2').level)\n",
    "sleepy": "import time\ntime.sleep(30)\n",
    "chatty": "for i in range(200):\n    print('line', i)\nraise SystemExit(5)\n",
    "no_newline": "import sys\nsys.stdout.write('half a line')\n",
    "teardown": "import atexit\natexit.register(lambda: print('interpreter teardown ran', flush=True))\n",
}


@pytest.fixture
def warm(tmp_path: Path):
    for name, body in MODULES.items():
        (tmp_path / f"{name}.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]), "PYTHONUNBUFFERED": "1"}
    lines: list[bytes] = []
    py = WarmPython("steps", sys.executable, ["json", "no_such_module_xyz"], env, tmp_path / "steps.log",
                    on_line=lines.append)
    yield py, lines, tmp_path / "steps.log"
    py.close()
    if py.child.poll() is None:
        py.child.stop(2.0)


def _text(lines: list[bytes]) -> str:
    return b"".join(lines).decode()


def test_orders_run_in_one_process_and_report_each_status(warm) -> None:
    py, lines, log = warm
    py.order("say_pid", ["a", "b"])
    assert py.wait(60) == 0
    py.order("say_pid", ["c"])
    assert py.wait(60) == 0
    pids = {line.split()[1] for line in _text(lines).splitlines() if line.startswith("pid ")}
    assert pids == {str(py.child.proc.pid)}  # the same interpreter ran both orders
    assert "argv ['a', 'b']" in _text(lines) and "argv ['c']" in _text(lines)
    assert "cannot pre-import no_such_module_xyz" in log.read_text()  # warming is best effort, and says so
    for module, rc in (("exit3", 3), ("exit_msg", 1), ("boom", 1), ("say_pid", 0)):
        py.order(module, [])
        assert py.wait(60) == rc, module
    text = _text(lines)
    assert "usage: exit_msg WHAT" in text and "RuntimeError: boom in the order" in text


def test_quiet_loggers_and_clean_exit_on_eof(warm) -> None:
    py, lines, _ = warm
    py.order("httpx_level", [])
    assert py.wait(60) == 0
    assert f"httpx level {logging.WARNING}" in _text(lines)
    py.order("teardown", [])
    assert py.wait(60) == 0
    py.close()
    assert py.child.wait(timeout=60) == 0
    assert "interpreter teardown ran" not in _text(lines)  # EOF ends it without the interpreter's teardown


def test_an_orders_status_comes_after_all_its_output(tmp_path: Path) -> None:
    """A slow reader of the lines (a loaded box) must still have every line of an order before its status."""
    for name, body in MODULES.items():
        (tmp_path / f"{name}.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]), "PYTHONUNBUFFERED": "1"}
    lines: list[bytes] = []

    def slow_reader(line: bytes) -> None:
        time.sleep(0.005)
        lines.append(line)

    py = WarmPython("steps", sys.executable, [], env, tmp_path / "steps.log", on_line=slow_reader, tee=False)
    try:
        py.order("chatty", [])
        assert py.wait(60) == 5
        assert _text(lines).count("line ") == 200 and "line 199\n" in _text(lines)
        py.order("no_newline", [])
        assert py.wait(60) == 0
        assert _text(lines).endswith("half a line\n")  # cut off by the barrier, not glued to it
        assert "eorch-warm" not in (tmp_path / "steps.log").read_text()
    finally:
        py.close()
        py.child.wait(timeout=60)


def test_a_child_that_dies_reports_its_own_status(warm) -> None:
    py, _, _ = warm
    py.order("die7", [])
    assert py.wait(60) == 7


def test_result_is_none_while_running_and_wait_times_out(warm) -> None:
    py, _, _ = warm
    py.order("sleepy", [])
    assert py.result(timeout=0.2) is None and py.busy
    with pytest.raises(TimeoutError):
        py.wait(0.5)
    with pytest.raises(AssertionError):
        py.order("say_pid", [])  # one order at a time
