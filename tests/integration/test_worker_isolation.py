"""eorch's worker is immune to the directory it starts in and to the user's Python environment, and jobs
get that environment unchanged: on the `local` host (eorch run from a directory full of traps) and on an
ssh host whose login directory holds the same traps (a second loopback sshd that starts sessions there)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import eorch, launch, show
from sshd import Sshd, make_sshd

# The job reports what it sees: its PYTHONPATH and which `worker` package `import worker` finds.
JOB = "import os, worker; print(os.environ.get('PYTHONPATH')); print(worker.MARK)"


def plant_traps(where: Path) -> Path:
    """Modules that break or hijack a python started in ``where``; returns a user PYTHONPATH entry that
    holds the user's own `worker` package."""
    (where / "inspect.py").write_text("raise SystemExit('the stray inspect.py in the cwd was imported')\n")
    (where / "json.py").write_text("raise SystemExit('the stray json.py in the cwd was imported')\n")
    (where / "worker").mkdir()
    (where / "worker" / "__init__.py").write_text("raise SystemExit('the worker/ in the cwd was imported')\n")
    userlib = where / "userlib"
    (userlib / "worker").mkdir(parents=True)
    (userlib / "worker" / "__init__.py").write_text("MARK = 'the user own worker package'\n")
    return userlib


@pytest.fixture(scope="module")
def trapped_login(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose sessions start in a login directory full of traps, with a login PYTHONPATH."""
    login = tmp_path_factory.mktemp("login-dir")
    userlib = plant_traps(login)
    server = make_sshd(
        tmp_path_factory.mktemp("sshd-trapped"),
        extra_config=f'ForceCommand cd {login} && PYTHONPATH={userlib} exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n',
    )
    yield server, userlib
    server.stop()


@pytest.fixture
def trapped_home(tmp_path: Path, trapped_login: tuple[Sshd, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    server, _ = trapped_login
    home = tmp_path / "eorch-home"
    home.mkdir()
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(server.ssh_config(alias="trapped"))
    (home / "config.toml").write_text(
        f'[ssh]\nconfig = ["{ssh_config}"]\n\n[monitor]\npoll_interval_s = 0.2\n'
        f'\n[local]\nroot = "{tmp_path / "local-root"}"\n'
    )
    monkeypatch.setenv("EORCH_HOME", str(home))
    return home


class TestLocalHost:
    def test_a_trapped_cwd_neither_breaks_the_launch_nor_reaches_the_job(
        self, eorch_home: Path, tmp_path: Path
    ) -> None:
        """inspect.py, json.py and worker/ in eorch's cwd are ignored; the job gets the user's PYTHONPATH
        as it was and imports the user's own `worker` package."""
        cwd = tmp_path / "project"
        cwd.mkdir()
        userlib = plant_traps(cwd)
        env = {**os.environ, "PYTHONPATH": str(userlib)}
        out = eorch("launch", "--host", "local", "--json", "--", sys.executable, "-c", JOB, cwd=cwd,
                    env=env, check=False)
        assert out.returncode == 0, out.stderr
        run_id = out.stdout.split('"id": "')[1].split('"')[0]
        eorch("watch", run_id, "--until-done", cwd=cwd, env=env)
        assert eorch("logs", run_id).stdout.splitlines() == [str(userlib), "the user own worker package"]
        assert show(run_id)["status"] == "succeeded"


    def test_the_user_pythonpath_reaches_the_job_unchanged(self, eorch_home: Path, tmp_path: Path) -> None:
        """Without any trap: the job's PYTHONPATH is the user's, not eorch's worker directory."""
        userlib = tmp_path / "userlib"
        (userlib / "worker").mkdir(parents=True)
        (userlib / "worker" / "__init__.py").write_text("MARK = 'the user own worker package'\n")
        env = {**os.environ, "PYTHONPATH": str(userlib)}
        out = eorch("launch", "--host", "local", "--json", "--", sys.executable, "-c", JOB, env=env)
        run_id = out.stdout.split('"id": "')[1].split('"')[0]
        eorch("watch", run_id, "--until-done", env=env)
        assert eorch("logs", run_id).stdout.splitlines() == [str(userlib), "the user own worker package"]


class TestSshHost:
    def test_a_trapped_login_directory_neither_breaks_the_launch_nor_reaches_the_job(
        self, trapped_home: Path, trapped_login: tuple[Sshd, Path], tmp_path: Path
    ) -> None:
        """The same traps in the ssh login directory: host add, check, launch and cancel work; the job sees
        the login PYTHONPATH unchanged and the user's `worker` package."""
        _, userlib = trapped_login
        eorch("host", "add", "box", "trapped", "--root", str(tmp_path / "remote-root"))
        eorch("host", "check", "box")
        run = launch(sys.executable, "-c", JOB, host="box")
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout.splitlines() == [str(userlib), "the user own worker package"]
        sleeper = launch("sleep", "300", host="box")
        eorch("cancel", sleeper["id"])
        assert show(sleeper["id"])["status"] == "cancelled"


class TestWorkerErrors:
    def test_a_failing_worker_is_named_as_such(self, eorch_home: Path, tmp_path: Path) -> None:
        """A worker that cannot start (its root cannot be made) is reported as eorch's worker with its python
        and the reason, not as `remote command 'env'`; nothing is recorded."""
        proc = eorch("host", "add", "box", "testbox", "--root", "/proc/eorch-cannot-be-here", check=False)
        assert proc.returncode == 1
        line = proc.stderr.strip()
        assert line.startswith("error: host 'box': eorch's worker (python3 on the host) failed to start, exit 1")
        assert "eorch-cannot-be-here" in line and "'env'" not in line and "Traceback" not in line
