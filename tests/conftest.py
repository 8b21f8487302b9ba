from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import hypothesis  # noqa: F401 - see below
import pytest

# Imported here, at collection, on purpose: otherwise a run without hypothesis tests (e.g. tests/tui) imports
# it in the plugin's terminal-summary hook, where pytest's assertion rewriter ast.parse()s it while a test's
# leftover thread may be parsing too; CPython 3.11's AST constructor state is not thread safe and such a run
# crashed once in five with "SystemError: AST constructor recursion depth mismatch" after every test passed.

# A suite started in the background by a non-interactive shell (`make test &`, nohup, a CI runner's job)
# inherits SIGINT ignored, and so would every `eorch watch` a test starts and stops with Ctrl-C's signal: the
# child's Python then never raises KeyboardInterrupt and the test waits in vain (it failed so in a background
# run). A handler here makes exec reset SIGINT to its default in every child, as a terminal would have it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from helpers import eorch, kill_leftovers
from sshd import Sshd, make_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")):
        pytest.fail("OpenSSH sshd is not installed: run `make test` (it installs openssh-server)")
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def _never_the_users_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the state of whoever runs the suite (``~/.local/share/eorch``, the needle sets
    kept in ``~/.cache/eorch``): a test that sets no $EORCH_HOME of its own gets the session's."""
    if os.environ.get("EORCH_HOME"):
        yield
        return
    os.environ["EORCH_HOME"] = str(tmp_path_factory.mktemp("eorch-home"))
    try:
        yield
    finally:
        os.environ.pop("EORCH_HOME", None)


@pytest.fixture(autouse=True)
def _nothing_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A failing test must not leave its jobs or its `eorch watch` running for the rest of the suite (they
    loaded the box for an hour once): whatever carries one of its runs' ids or its $EORCH_HOME is killed."""
    yield
    tmp_path = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if isinstance(tmp_path, Path):
        kill_leftovers(tmp_path)


@pytest.fixture
def eorch_home(tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $EORCH_HOME whose ssh config knows the loopback sshd as `testbox`."""
    home = tmp_path / "eorch-home"
    home.mkdir()
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(sshd.ssh_config())
    (home / "config.toml").write_text(
        f'[ssh]\nconfig = ["{ssh_config}"]\n\n[monitor]\npoll_interval_s = 0.2\ncancel_grace_s = 3\n'
        # Tests start their monitors themselves (tests/integration/test_monitoring.py tests the automatic one).
        'auto_start = false\n'
        f'\n[local]\nroot = "{tmp_path / "local-root"}"\n'
    )
    monkeypatch.setenv("EORCH_HOME", str(home))
    return home


@pytest.fixture
def cli():
    return eorch


@pytest.fixture
def plain_home(tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user's setup: no ssh config anywhere, the client key as ~/.ssh/id_ed25519 and the loopback
    sshd's key in ~/.ssh/known_hosts (HOME is a temporary directory); returns the fresh $EORCH_HOME."""
    user_home = tmp_path / "user-home"
    dot_ssh = user_home / ".ssh"
    dot_ssh.mkdir(parents=True, mode=0o700)
    shutil.copy(sshd.client_key, dot_ssh / "id_ed25519")
    (dot_ssh / "id_ed25519").chmod(0o600)
    shutil.copy(sshd.known_hosts, dot_ssh / "known_hosts")
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    home = tmp_path / "eorch-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[monitor]\npoll_interval_s = 0.2\ncancel_grace_s = 3\n\n[local]\nroot = "{tmp_path / "local-root"}"\n'
    )
    monkeypatch.setenv("EORCH_HOME", str(home))
    return home
