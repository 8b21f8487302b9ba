"""`eorch rerun` end to end through the loopback sshd: the same command, env, cwd and host again; a spec run from
the spec it recorded (its file gone); the recipe's preflight again; bad input refused with one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import add_testbox, db_rows, eorch, launch, show

JOB = "import os, sys; print('cwd', os.getcwd(), 'FOO', os.environ.get('FOO'), 'TOKEN', os.environ.get('MY_TOKEN'))"


def rerun(*args: str, check: bool = True):
    return eorch("rerun", *args, check=check)


def log_of(run_id: str) -> str:
    return eorch("logs", run_id).stdout


class TestRerunCommand:
    def test_same_command_env_cwd_and_host(self, eorch_home: Path, tmp_path: Path) -> None:
        """The rerun runs the same argv with the same env and cwd on the same host, and records what it repeats."""
        add_testbox(tmp_path)
        work = tmp_path / "work"
        work.mkdir()
        first = launch(sys.executable, "-c", JOB, extra=("--name", "printer", "--env", "FOO=bar", "--cwd", str(work),
                                                         "--env", "MY_TOKEN=first-secret"))
        eorch("watch", first["id"], "--until-done")
        # the secret was never recorded: a rerun without it is refused, and nothing starts
        refused = rerun(first["id"], "--yes", check=False)
        assert refused.returncode == 2
        assert refused.stderr.count("\n") == 1 and "MY_TOKEN" in refused.stderr and "--secret-env" in refused.stderr
        assert db_rows(eorch_home, "select count(*) from runs") == [(1,)]
        new = json.loads(rerun(first["id"], "--yes", "--json", "--secret-env", "MY_TOKEN=second-secret").stdout)
        eorch("watch", new["id"], "--until-done")
        again = show(new["id"])
        assert again["rerun_of"] == first["id"] and again["id"] != first["id"]
        assert again["command"] == first["command"] and again["cwd"] == first["cwd"] == str(work)
        assert again["env"] == first["env"] == {"FOO": "bar", "MY_TOKEN": "<redacted>"}
        assert again["host"] == "gpu" and again["name"] == "printer" and again["status"] == "succeeded"
        assert f"cwd {work} FOO bar TOKEN first-secret" in log_of(first["id"])
        assert f"cwd {work} FOO bar TOKEN second-secret" in log_of(new["id"])
        assert "second-secret" not in json.dumps(again)
        assert f"rerun of {first['id']}" in eorch("show", new["id"]).stdout
        assert "rerun of" not in eorch("show", first["id"]).stdout

    def test_asks_first_and_other_host_and_name(self, eorch_home: Path, tmp_path: Path) -> None:
        """Without --yes it asks (a no starts nothing); --host and --name change where and what it is called."""
        add_testbox(tmp_path)
        add_testbox(tmp_path, name="gpu2")
        first = launch(sys.executable, "-c", "print('hi')")
        eorch("watch", first["id"], "--until-done")
        declined = eorch("rerun", first["id"], input="n\n", check=False)
        assert declined.returncode == 1 and "nothing was started" in declined.stderr
        assert f"rerun of {first['id']}" in declined.stderr and "print('hi')" in declined.stderr
        assert db_rows(eorch_home, "select count(*) from runs") == [(1,)]
        out = eorch("rerun", first["id"], "--host", "gpu2", "--name", "moved", input="y\n")
        assert f"rerun of {first['id']}" in out.stdout
        new_id = db_rows(eorch_home, "select id from runs where rerun_of = ?", first["id"])[0][0]
        moved = show(new_id)
        assert moved["host"] == "gpu2" and moved["name"] == "moved" and moved["command"] == first["command"]


class TestRerunSpec:
    def test_command_spec_reruns_from_the_recorded_spec_after_its_file_is_gone(self, eorch_home: Path,
                                                                              tmp_path: Path) -> None:
        """The spec a run recorded is what a rerun runs: its TOML file may have been edited or deleted since."""
        add_testbox(tmp_path)
        spec = tmp_path / "job.toml"
        spec.write_text(f'kind = "command"\nname = "from-spec"\n[command]\nargv = ["{sys.executable}", "-c", '
                        '"import os; print(\'spec says\', os.environ[\'WHO\'])"]\nenv = { WHO = "the-spec" }\n')
        first = json.loads(eorch("launch", "--host", "gpu", "--spec", str(spec), "--json").stdout)
        spec.unlink()
        new = json.loads(rerun(first["id"], "--yes", "--json").stdout)
        eorch("watch", new["id"], "--until-done")
        assert "spec says the-spec" in log_of(new["id"])
        assert db_rows(eorch_home, "select spec, kind, rerun_of from runs where id = ?", new["id"]) == \
            db_rows(eorch_home, "select spec, kind, ? from runs where id = ?", first["id"], first["id"])

    def test_eagle3_spec_reruns_with_its_preflight(self, eorch_home: Path, tmp_path: Path) -> None:
        """An eagle3-extract run is checked again before its rerun starts (a failed check: nothing started);
        --no-preflight reruns the recorded spec.json as it was."""
        root = add_testbox(tmp_path)
        spec = tmp_path / "e3.toml"
        spec.write_text(f'kind = "eagle3-extract"\n[eagle3]\nmodel = "{tmp_path / "no-model"}"\n'
                        f'data = "{tmp_path / "no-data"}"\noutput = "{tmp_path / "hs"}"\ncanary = false\n'
                        f'vllm_python = "{sys.executable}"\nspeculators_python = "{sys.executable}"\n')
        first = json.loads(eorch("launch", "--host", "gpu", "--spec", str(spec), "--no-preflight", "--name", "e3",
                                 "--set", "eagle3.port=8123", "--json").stdout)
        spec.unlink()
        refused = rerun(first["id"], "--yes", check=False)
        assert refused.returncode == 1 and "launch refused on gpu: preflight failed" in refused.stderr
        assert db_rows(eorch_home, "select count(*) from runs") == [(1,)]
        new = json.loads(rerun(first["id"], "--yes", "--no-preflight", "--json").stdout)
        assert new["rerun_of"] == first["id"] and new["kind"] == "eagle3-extract" and new["name"] == "e3"
        first_spec = json.loads((root / "runs" / first["id"] / "spec.json").read_text())
        assert json.loads((root / "runs" / new["id"] / "spec.json").read_text()) == first_spec
        assert first_spec["eagle3"]["port"] == 8123
        assert new["command"][1:3] == ["-m", "worker.recipes.eagle3"]
        assert new["command"][3] == f"{new['remote_dir']}/spec.json"
        eorch("watch", first["id"], new["id"], "--until-done", timeout=300, check=False)


class TestRerunBadInput:
    def test_one_line_and_nothing_started(self, eorch_home: Path, tmp_path: Path) -> None:
        """An unknown run, an unknown host, a recorded spec eorch no longer takes: one line, exit 2, no new run."""
        add_testbox(tmp_path)
        first = launch(sys.executable, "-c", "print('x')")
        eorch("watch", first["id"], "--until-done")
        for args, words in ((("nosuchrun",), "unknown run 'nosuchrun'"),
                            ((first["id"], "--host", "nosuchhost"), "unknown host 'nosuchhost'"),
                            ((first["id"], "--no-canary"), "--canary/--no-canary apply to an eagle3-extract run")):
            out = rerun(*args, "--yes", check=False)
            assert out.returncode == 2, (args, out.stderr)
            assert out.stderr.count("\n") == 1 and words in out.stderr and "Traceback" not in out.stderr
        import sqlite3

        with sqlite3.connect(eorch_home / "eorch.db") as conn:
            conn.execute("update runs set kind = 'eagle3-extract', spec = ? where id = ?",
                         (json.dumps({"kind": "eagle3-extract", "eagle3": {"model": "m", "no_such_key": 1}}),
                          first["id"]))
        out = rerun(first["id"], "--yes", check=False)
        assert out.returncode == 2 and out.stderr.count("\n") == 1
        assert f"spec recorded by run {first['id']}" in out.stderr and "Traceback" not in out.stderr
        assert db_rows(eorch_home, "select count(*) from runs") == [(1,)]
