"""A new user's first contact, against the loopback sshd with no ssh config anywhere (`plain_home`):
every destination form ssh accepts, host keys checked as always, and the tour's commands afterwards."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import db_rows, eorch, launch, pids_with_run_id, show, wait_for
from sshd import Sshd


def _forms(sshd: Sshd) -> dict[str, list[str]]:
    return {
        "user@ip --port": [f"{sshd.user}@127.0.0.1", "--port", str(sshd.port)],
        "ip --port": ["127.0.0.1", "--port", str(sshd.port)],
        "user@name --port": [f"{sshd.user}@localhost", "--port", str(sshd.port)],
        "name --port": ["localhost", "--port", str(sshd.port)],
        "ssh:// url": [f"ssh://{sshd.user}@127.0.0.1:{sshd.port}"],
    }


class TestDestinations:
    @pytest.mark.parametrize("form", ["user@ip --port", "ip --port", "user@name --port", "name --port", "ssh:// url"])
    def test_each_form_reaches_the_host_without_an_ssh_config(
        self, plain_home: Path, tmp_path: Path, sshd: Sshd, form: str
    ) -> None:
        """`host add NAME DEST` connects with the key in ~/.ssh/known_hosts; `host check` works after it."""
        added = eorch("host", "add", "box", *_forms(sshd)[form], "--root", str(tmp_path / "r"), check=False)
        assert added.returncode == 0, added.stderr
        assert "added host box" in added.stdout
        facts = json.loads(eorch("host", "check", "box", "--json").stdout)
        assert facts["python"].startswith("3.")
        (destination, port), = db_rows(plain_home, "select destination, port from hosts where name='box'")
        assert port == sshd.port and "://" not in destination

    def test_an_alias_from_the_default_ssh_config(self, plain_home: Path, tmp_path: Path, sshd: Sshd) -> None:
        """An alias in ~/.ssh/config (not eorch's config) is resolved as ssh resolves it."""
        (Path.home() / ".ssh" / "config").write_text(
            f"Host gpu-box\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n")
        eorch("host", "add", "gpu1", "gpu-box", "--root", str(tmp_path / "r"))
        eorch("host", "check", "gpu1")

    def test_unknown_key_is_refused_then_pinned_only_when_asked(
        self, plain_home: Path, tmp_path: Path, sshd: Sshd
    ) -> None:
        """With an empty ~/.ssh/known_hosts a plain destination is refused; --accept-new-host-key pins it."""
        (Path.home() / ".ssh" / "known_hosts").write_text("")
        dest = f"{sshd.user}@127.0.0.1"
        refused = eorch("host", "add", "box", dest, "--port", str(sshd.port), check=False)
        assert refused.returncode != 0 and "not in known_hosts" in refused.stderr
        assert f"ssh -p {sshd.port} {dest}" in refused.stderr and "Traceback" not in refused.stderr
        assert db_rows(plain_home, "select name from hosts where name='box'") == []
        pinned = eorch("host", "add", "box", f"ssh://{dest}:{sshd.port}", "--root", str(tmp_path / "r"),
                       "--accept-new-host-key")
        assert "pinned host key SHA256:" in pinned.stdout
        assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in (plain_home / "known_hosts").read_text()

    def test_a_changed_key_is_refused_for_a_plain_destination(
        self, plain_home: Path, tmp_path: Path, sshd: Sshd
    ) -> None:
        """A known_hosts entry with another key stops `host add` even with --accept-new-host-key."""
        import subprocess

        other = tmp_path / "otherkey"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        key = " ".join(Path(str(other) + ".pub").read_text().split()[:2])
        (Path.home() / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {key}\n")
        proc = eorch("host", "add", "evil", "127.0.0.1", "--port", str(sshd.port), "--accept-new-host-key",
                     check=False)
        assert proc.returncode != 0 and "CHANGED" in proc.stderr
        assert db_rows(plain_home, "select name from hosts where name='evil'") == []

    @pytest.mark.parametrize("args, words", [
        (["--", "-oProxyCommand=touch x"], "characters ssh does not accept"),
        (["ssh://me@127.0.0.1:2222", "--port", "2200"], "disagrees with --port 2200"),
        (["127.0.0.1", "--port", "99999"], "use 1-65535"),
    ])
    def test_a_bad_destination_is_one_line_and_nothing_stored(
        self, plain_home: Path, args: list[str], words: str
    ) -> None:
        """Refused before any connection: exit 2, one line naming the problem, no host row."""
        proc = eorch("host", "add", "bad", *args, check=False)
        assert proc.returncode == 2
        assert words in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        db = plain_home / "eorch.db"
        assert not db.exists() or db_rows(plain_home, "select name from hosts where name='bad'") == []


class TestTourOnAPlainHost:
    def test_launch_watch_logs_cancel_on_a_user_at_host(self, plain_home: Path, tmp_path: Path, sshd: Sshd) -> None:
        """The README tour on `user@host --port N`: launch, watch, logs, show, cancel."""
        eorch("host", "add", "gpu1", f"{sshd.user}@localhost", "--port", str(sshd.port), "--root", str(tmp_path / "r"))
        run = launch(sys.executable, "-c", "print('hello from the job')", host="gpu1")
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout == "hello from the job\n"
        assert show(run["id"])["status"] == "succeeded"
        sleeper = launch("sleep", "300", host="gpu1")
        wait_for(lambda: pids_with_run_id(sleeper["id"]), what="the job to start")
        eorch("cancel", sleeper["id"])
        assert pids_with_run_id(sleeper["id"]) == []
        assert show(sleeper["id"])["status"] == "cancelled"
