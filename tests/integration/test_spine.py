"""The spine end to end through a real sshd on 127.0.0.1: launch, follow, record, cancel, recover."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import add_testbox, db_rows, eorch, launch, pids_with_run_id, show, wait_for


class TestHosts:
    def test_add_and_check_reports_os_python_disk(self, eorch_home: Path, tmp_path: Path) -> None:
        """A host whose key is in known_hosts is added; `host check --json` reports its facts."""
        add_testbox(tmp_path)
        facts = json.loads(eorch("host", "check", "gpu", "--json").stdout)
        assert facts["python"].startswith("3.")
        assert facts["disk_free_bytes"] > 0
        assert isinstance(facts["gpus"], list)

    def test_changed_host_key_is_refused_and_nothing_is_written(
        self, eorch_home: Path, tmp_path: Path, sshd
    ) -> None:
        """A known_hosts entry with another key is refused with instructions; no host row is created."""
        other = tmp_path / "otherkey"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        bad_kh = tmp_path / "bad_known_hosts"
        bad_kh.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(Path(str(other) + '.pub').read_text().split()[:2])}\n")
        config = tmp_path / "ssh_config"
        config.write_text(sshd.ssh_config(known_hosts=bad_kh))
        proc = eorch("host", "add", "evil", "testbox", "--accept-new-host-key", check=False)
        assert proc.returncode != 0
        assert "CHANGED" in proc.stderr and "Traceback" not in proc.stderr
        assert db_rows(eorch_home, "select name from hosts where name='evil'") == []

    def test_unknown_host_key_refused_unless_explicitly_pinned(
        self, eorch_home: Path, tmp_path: Path, sshd
    ) -> None:
        """An unknown key is refused; --accept-new-host-key pins it in $EORCH_HOME/known_hosts."""
        empty_kh = tmp_path / "empty_known_hosts"
        empty_kh.write_text("")
        (tmp_path / "ssh_config").write_text(sshd.ssh_config(known_hosts=empty_kh))
        refused = eorch("host", "add", "newbox", "testbox", check=False)
        assert refused.returncode != 0 and "not in known_hosts" in refused.stderr
        assert "Traceback" not in refused.stderr
        pinned = eorch("host", "add", "newbox", "testbox", "--root", str(tmp_path / "r"), "--accept-new-host-key")
        assert "pinned host key SHA256:" in pinned.stdout
        assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in (eorch_home / "known_hosts").read_text()
        eorch("host", "check", "newbox")


class TestRuns:
    @pytest.mark.parametrize("code, status", [(0, "succeeded"), (7, "failed")])
    def test_exit_codes_decide_the_status(self, eorch_home: Path, tmp_path: Path, code: int, status: str) -> None:
        """The job's exit code reaches the history through the wrapper's atomic rc file."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", f"print('hello'); raise SystemExit({code})")
        assert run["status"] == "running"
        proc = eorch("watch", run["id"], "--until-done", check=False)
        assert proc.returncode == (0 if code == 0 else 1)
        record = show(run["id"])
        assert record["status"] == status and record["exit_code"] == code
        assert record["log_offset"] == len(b"hello\n")

    def test_injection_text_reaches_the_job_verbatim(self, eorch_home: Path, tmp_path: Path) -> None:
        """Arguments are quoted by shlex.join: shell metacharacters arrive as data."""
        add_testbox(tmp_path)
        nasty = "'; rm -rf ~; '"
        run = launch(sys.executable, "-c", "import sys; print(repr(sys.argv[1:]))", nasty, "$HOME", "a b")
        eorch("watch", run["id"], "--until-done")
        log = eorch("logs", run["id"]).stdout
        assert log.strip() == repr([nasty, "$HOME", "a b"])

    def test_logs_prints_the_remote_log_and_its_tail(self, eorch_home: Path, tmp_path: Path) -> None:
        """`eorch logs` prints the whole remote log; `--tail N` its last N lines."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", "for i in range(5): print('line', i)")
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout.splitlines() == [f"line {i}" for i in range(5)]
        assert eorch("logs", run["id"], "--tail", "2").stdout.splitlines() == ["line 3", "line 4"]

    def test_env_and_cwd_reach_the_job(self, eorch_home: Path, tmp_path: Path) -> None:
        """--env and --cwd apply; EORCH_RUN_ID marks the job's processes."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", "import os; print(os.environ['FOO'], os.getcwd(), os.environ['EORCH_RUN_ID'])",
                     extra=("--env", "FOO=bar baz", "--cwd", str(tmp_path)))
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout.split() == ["bar", "baz", str(tmp_path), run["id"]]

    def test_sigkill_of_the_job_is_lost(self, eorch_home: Path, tmp_path: Path) -> None:
        """A job (and its wrapper) killed with SIGKILL leaves no rc: the run is lost, not failed."""
        add_testbox(tmp_path)
        run = launch("sleep", "300")
        wrapper = json.loads(Path(run["remote_dir"], "wrapper.json").read_text())
        os.killpg(wrapper["pgid"], signal.SIGKILL)
        eorch("watch", run["id"], "--until-done", check=False)
        assert show(run["id"])["status"] == "lost"

    def test_cancel_kills_a_tree_whose_grandchild_escaped_with_setsid(self, eorch_home: Path, tmp_path: Path) -> None:
        """TERM/KILL reach a grandchild in another session; nothing with the run's marker is left."""
        add_testbox(tmp_path)
        script = "setsid sleep 400 & sleep 401 & echo started; wait"
        run = launch("bash", "-c", script)
        wait_for(lambda: len(pids_with_run_id(run["id"])) >= 3, what="job tree")
        out = eorch("cancel", run["id"], "--json")
        assert json.loads(out.stdout)["remaining"] == []
        assert pids_with_run_id(run["id"]) == []
        record = show(run["id"])
        assert record["status"] == "cancelled"
        assert record["exit_code"] == 143

    def test_truncation_is_recorded_not_garbled(self, eorch_home: Path, tmp_path: Path) -> None:
        """A log truncated under the follower becomes a log_truncated event; following restarts."""
        add_testbox(tmp_path)
        flag = tmp_path / "go"
        job = (f"import time,os\nprint('x'*200, flush=True)\n"
               f"while not os.path.exists({str(flag)!r}): time.sleep(0.05)\nprint('after', flush=True)")
        run = launch(sys.executable, "-c", job)
        watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"], "--until-done"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: show(run["id"])["log_offset"] >= 201, what="first line recorded")
            os.truncate(Path(run["remote_dir"], "log"), 0)
            time.sleep(1.0)
            flag.write_text("")
            watcher.wait(60)
        finally:
            watcher.kill()
        kinds = [k for (k,) in db_rows(eorch_home, "select kind from events where run_id=?", run["id"])]
        assert "log_truncated" in kinds
        assert show(run["id"])["status"] == "succeeded"
