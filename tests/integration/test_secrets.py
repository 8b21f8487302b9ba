"""Secrets reach the job and nothing else: not the history, not `show`/`export`, not the host's run files.

Jobs run on the loopback sshd (`testbox`) and on `local`; the job proves it got a secret by printing its
hash (printing the value would put it in the log, which is the job's business, not eorch's).
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from pathlib import Path

import pytest
from helpers import add_testbox, eorch, launch, show
from test_slurm import cluster, slurm_cluster  # noqa: F401 (fixtures)

TOKEN = "hf_S3cr3tT0kenValue"
PASSWORD = "pw-Only-The-Job-Sees"
PRINT_HASHES = ("import hashlib, os\n"
                "for k in ('HF_TOKEN', 'MY_PASS', 'PLAIN'):\n"
                "    print(k, hashlib.sha256(os.environ[k].encode()).hexdigest()[:16])\n")


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def history_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("eorch.db*"))


class TestSecretEnv:
    def test_secret_values_reach_the_job_only(self, eorch_home: Path, tmp_path: Path) -> None:
        """`--env HF_TOKEN=…` (secret by name) and `--secret-env` reach the job; history, `show`, `show --json`,
        `export` and the remote meta.json hold only `<redacted>`; the hand-over file is gone; 0700/0600."""
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", PRINT_HASHES,
                     extra=("--env", f"HF_TOKEN={TOKEN}", "--secret-env", f"MY_PASS={PASSWORD}", "--env", "PLAIN=ok"))
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout.split() == [
            "HF_TOKEN", digest(TOKEN), "MY_PASS", digest(PASSWORD), "PLAIN", digest("ok")]

        assert show(run["id"])["env"] == {"HF_TOKEN": "<redacted>", "MY_PASS": "<redacted>", "PLAIN": "ok"}
        printed = (eorch("show", run["id"]).stdout + eorch("show", run["id"], "--json").stdout
                   + eorch("export").stdout + eorch("export", "--format", "csv", "--table", "runs").stdout)
        db = history_bytes(eorch_home)
        run_dir = Path(run["remote_dir"])
        meta = (run_dir / "meta.json").read_text()
        for secret in (TOKEN, PASSWORD):
            assert secret not in printed and secret.encode() not in db and secret not in meta
        assert json.loads(meta)["secret_keys"] == ["HF_TOKEN", "MY_PASS"]
        assert not (run_dir / "secret_env.json").exists()
        assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
        for name in ("meta.json", "log", "rc", "wrapper.json", "wrapper.err"):
            assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o600, name

    def test_secrets_in_a_command_spec_are_not_recorded(self, eorch_home: Path, tmp_path: Path) -> None:
        """A spec's `[command] env` secret reaches the job; the recorded spec and env say `<redacted>`."""
        add_testbox(tmp_path)
        spec = tmp_path / "job.toml"
        spec.write_text(f'kind = "command"\nname = "spec-secret"\n[command]\nargv = ["{sys.executable}", "-c", '
                        f'{json.dumps(PRINT_HASHES)}]\nenv = {{ HF_TOKEN = "{TOKEN}", MY_PASS = "x", PLAIN = "ok" }}\n')
        run = json.loads(eorch("launch", "--host", "gpu", "--spec", str(spec), "--json").stdout)
        eorch("watch", run["id"], "--until-done")
        assert digest(TOKEN) in eorch("logs", run["id"]).stdout
        assert TOKEN.encode() not in history_bytes(eorch_home)
        assert TOKEN not in eorch("export").stdout

    def test_a_bad_secret_env_is_refused_without_echoing_the_value(self, eorch_home: Path, tmp_path: Path) -> None:
        """A malformed `--secret-env` names the key, never the value."""
        add_testbox(tmp_path)
        proc = eorch("launch", "--host", "gpu", "--secret-env", f"1BAD={PASSWORD}", "--", "true", check=False)
        assert proc.returncode == 2 and "bad --secret-env '1BAD'" in proc.stderr and PASSWORD not in proc.stderr


class TestControllerEnvironment:
    def test_eorch_settings_do_not_reach_local_jobs(self, eorch_home: Path) -> None:
        """`EORCH_ALERT_URLS` (a token in it) and `EORCH_HOME` stay with the controller on the `local` host."""
        url = f"json://127.0.0.1:1/{TOKEN}"
        out = eorch("launch", "--host", "local", "--json", "--", sys.executable, "-c",
                    "import os; print(sorted(k for k in os.environ if k.startswith('EORCH_')))",
                    env={"EORCH_ALERT_URLS": url})
        run = json.loads(out.stdout)
        eorch("watch", run["id"], "--until-done", env={"EORCH_ALERT_URLS": ""})
        assert eorch("logs", run["id"]).stdout.strip() == "['EORCH_RUN_DIR', 'EORCH_RUN_ID']"


class TestSlurmSecret:
    @pytest.mark.usefixtures("cluster")
    def test_secret_reaches_a_slurm_job_started_later(self, eorch_home: Path) -> None:
        """On a Slurm host the job starts after sbatch returns: it still gets the secret, from the 0600 file
        its wrapper deletes on start; meta.json and the history never hold it."""
        run = launch(sys.executable, "-c", PRINT_HASHES, host="cluster",
                     extra=("--env", f"HF_TOKEN={TOKEN}", "--secret-env", f"MY_PASS={PASSWORD}", "--env", "PLAIN=ok"))
        eorch("watch", run["id"], "--until-done")
        assert eorch("logs", run["id"]).stdout.split() == [
            "HF_TOKEN", digest(TOKEN), "MY_PASS", digest(PASSWORD), "PLAIN", digest("ok")]
        run_dir = Path(run["remote_dir"])
        assert not (run_dir / "secret_env.json").exists()
        assert TOKEN not in (run_dir / "meta.json").read_text() and TOKEN.encode() not in history_bytes(eorch_home)
