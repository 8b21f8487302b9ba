"""Alerts end to end through the loopback sshd: a crash reaches a local json:// receiver once, with its cause."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import eorch
from test_spine import add_testbox, launch, wait_for

CRASH = (
    "import sys, time\n"
    "print('starting the job', flush=True)\n"
    "time.sleep(1.5)\n"
    "raise RuntimeError('block_hashes mismatch for request 1234')\n"
)


class Receiver:
    """A tiny HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it (on ``port``, default any free
    one); the first ``refuse`` POSTs get a 503 and are not kept."""

    def __init__(self, port: int = 0, refuse: int = 0) -> None:
        received = self.received = []  # type: list[dict]
        refused = self.refused = []  # type: list[dict]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if len(refused) < refuse:
                    refused.append(body)
                    self.send_response(503)
                else:
                    received.append(body)
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def stop(self) -> None:
        self.server.shutdown()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.stop()


def configure_alerts(home: Path, *urls: str, extra: str = "") -> None:
    listed = ", ".join(json.dumps(u) for u in urls)
    with (home / "config.toml").open("a") as f:
        f.write(f"\n[alerts]\nurls = [{listed}]\ndesktop = false\nretries = 2\nbackoff_s = 0.1\n{extra}")


def alerts_of(run_id: str) -> list[dict]:
    return json.loads(eorch("alerts", "--run", run_id, "--json").stdout)


class TestCrash:
    def test_crash_gives_one_failed_alert_with_root_cause(self, eorch_home: Path, tmp_path: Path,
                                                          receiver: Receiver) -> None:
        """A job crashing while watched yields exactly one `failed` alert whose body has the root cause."""
        dead = "json://127.0.0.1:1/nobody-listens"
        configure_alerts(eorch_home, receiver.url(), dead)
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", CRASH)
        watched = eorch("watch", run["id"], "--until-done", check=False)
        assert watched.returncode == 1
        failed = [m for m in receiver.received if "FAILED" in m["title"]]
        assert len(failed) == 1, receiver.received
        body = failed[0]["message"]
        assert "RuntimeError" in body and "block_hashes mismatch" in body
        assert f"eorch show {run['id']}" in body and "on gpu" in body
        assert failed[0]["type"] == "failure"
        # The dead URL was retried and recorded as failed; the live one was delivered regardless.
        recorded = [a for a in alerts_of(run["id"]) if a["kind"] == "failed"]
        assert len(recorded) == 1
        assert sorted(d["ok"] for d in recorded[0]["deliveries"]) == [False, True]
        assert all("nobody-listens" not in json.dumps(d) for d in recorded[0]["deliveries"])
        states = {d["state"]: d for d in recorded[0]["deliveries"]}
        assert set(states) == {"sent", "failed"} and recorded[0]["delivery"] == "failed"
        assert states["failed"]["attempts"] == 2 and states["failed"]["error"] and states["sent"]["sent_at"]
        # A second monitor finds the alert already raised and sends nothing new.
        before = len(receiver.received)
        eorch("watch", run["id"], "--until-done", check=False)
        assert len(receiver.received) == before
        listed = eorch("alerts").stdout
        assert "FAILED" in listed and "json://127.0.0.1 sent" in listed and "FAILED after 2 attempts" in listed
        assert "FAILED after all retries" in listed and "nobody-listens" not in listed

    def test_kind_filter_and_env_urls(self, eorch_home: Path, tmp_path: Path, receiver: Receiver) -> None:
        """A URL filtered to `lost` gets nothing for a success; EORCH_ALERT_URLS adds a channel for all kinds."""
        with (eorch_home / "config.toml").open("a") as f:
            f.write(f'\n[alerts]\nurls = [{{ url = "{receiver.url("lost-only")}", kinds = ["lost"] }}]\n'
                    "desktop = false\n")
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", "print('fine')")
        eorch("watch", run["id"], "--until-done", env={"EORCH_ALERT_URLS": receiver.url("all")})
        titles = [m["title"] for m in receiver.received]
        assert len(titles) == 1 and "succeeded" in titles[0]


class TestRestart:
    def test_a_second_engine_does_not_resend(self, eorch_home: Path, tmp_path: Path, receiver: Receiver) -> None:
        """Two engines (a monitor and its restart) evaluating the same failed run deliver one alert."""
        from orchestrator.alerts.channels import AlertsConfig, AppriseChannel, ChannelEntry, Dispatcher
        from orchestrator.alerts.engine import AlertEngine
        from orchestrator.alerts.rules import RunFacts
        from orchestrator.context import Context
        from orchestrator.store.models import Run
        from orchestrator.store.queries import utcnow

        configure_alerts(eorch_home, receiver.url())
        add_testbox(tmp_path)
        run = launch(sys.executable, "-c", "raise SystemExit(3)")
        eorch("watch", run["id"], "--until-done", check=False)
        assert len(receiver.received) == 1
        ctx = Context.load()
        config = AlertsConfig(retries=1)
        for _ in range(2):
            engine = AlertEngine(ctx, Dispatcher(ctx, [AppriseChannel(ChannelEntry(url=receiver.url()))], config))
            assert engine.evaluate_run(run["id"], RunFacts(new_status="failed")) == []
            engine.dispatcher.flush(5)
        assert len(receiver.received) == 1
        # A stall check on a run that went quiet raises `stalled` once, with the injected clock.
        with ctx.db() as s:
            row = s.get(Run, run["id"])
            row.status = "running"
        later = AlertEngine(ctx, Dispatcher(ctx, [AppriseChannel(ChannelEntry(url=receiver.url()))], config),
                            clock=lambda: utcnow() + timedelta(minutes=20))
        assert [a.kind.value for a in later.check_time_rules()] == ["stalled"]
        assert later.check_time_rules() == []
        later.dispatcher.flush(5)
        assert "STALLED" in receiver.received[-1]["title"]


class TestChannels:
    def test_alerts_test_reaches_every_channel_and_redacts(self, eorch_home: Path, receiver: Receiver) -> None:
        """`eorch alerts test` delivers to the live URL, reports the dead one, and never prints secrets."""
        secret = f"json://user:s3cr3t@127.0.0.1:{receiver.port}/tok-abc"
        configure_alerts(eorch_home, secret, "json://127.0.0.1:1/also-secret")
        proc = eorch("alerts", "test", check=False)
        assert proc.returncode == 1
        assert "delivered" in proc.stdout and "FAILED" in proc.stdout
        assert "s3cr3t" not in proc.stdout + proc.stderr and "tok-abc" not in proc.stdout + proc.stderr
        assert "also-secret" not in proc.stdout + proc.stderr
        assert len(receiver.received) == 1 and "test alert" in receiver.received[0]["title"]

    def test_bad_kind_in_config_is_one_clear_line(self, eorch_home: Path) -> None:
        """An unknown alert kind in a URL filter is a config error naming the key, without the URL."""
        with (eorch_home / "config.toml").open("a") as f:
            f.write('\n[alerts]\nurls = [{ url = "slack://T0K3N/B/C", kinds = ["exploded"] }]\n')
        proc = eorch("alerts", "test", check=False)
        assert proc.returncode != 0 and "alerts.urls" in proc.stderr and "T0K3N" not in proc.stderr

    def test_redaction(self) -> None:
        """Only the scheme and the host's domain (never a subdomain: it can be a token) survive redaction."""
        from orchestrator.alerts.channels import redact_url

        assert redact_url("json://u:p@hooks.example.com:8443/x?token=1") == "json://….example.com"
        assert redact_url("json://S3CR3TT0K3N.host.example/x") == "json://….host.example"
        assert redact_url("json://u:p@127.0.0.1:8443/x") == "json://127.0.0.1"
        assert redact_url("slack://TOKENA/TOKENB/TOKENC/#chan") == "slack://…"
        assert redact_url("tgram://123456:ABCDEF/987") == "tgram://…"
        assert redact_url("mailto://me:pw@gmail.com") == "mailto://gmail.com"


class TestDaemon:
    def test_daemon_follows_new_runs_and_holds_the_lock(self, eorch_home: Path, tmp_path: Path,
                                                        receiver: Receiver) -> None:
        """`eorch daemon` alerts on a run launched after it started; a second daemon is refused."""
        import os
        import signal
        import subprocess

        configure_alerts(eorch_home, receiver.url())
        add_testbox(tmp_path)
        daemon = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "daemon"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        try:
            wait_for(lambda: (eorch_home / "monitor.lock").exists() and
                     "pid" in (eorch_home / "monitor.lock").read_text(), what="daemon lock")
            second = eorch("daemon", check=False, timeout=30)
            assert second.returncode != 0 and "already being followed" in second.stderr
            run = launch(sys.executable, "-c", "raise SystemExit(5)")
            wait_for(lambda: any("FAILED" in m["title"] for m in receiver.received), timeout=30,
                     what="failed alert from the daemon")
            assert run["id"] in receiver.received[-1]["message"]
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=20)
        assert daemon.returncode == 0, err
