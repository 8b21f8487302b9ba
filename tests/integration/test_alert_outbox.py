"""The alert outbox: a delivery is recorded pending before it is sent, so a monitor killed in between loses
nothing — the next monitor to start sends it, exactly once — and a delivery marked sent is never sent again.

Real parts: the loopback sshd, the history file migrated by Alembic, apprise posting to a json:// receiver on
127.0.0.1, and `eorch watch` / `eorch daemon` as subprocesses killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from helpers import db_rows, eorch
from test_alerts import Receiver
from test_spine import add_testbox, launch, wait_for

SECRET, TOKEN = "s3cr3t-pw", "tok-9f8e7d"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def secret_url(port: int) -> str:
    return f"json://eorch:{SECRET}@127.0.0.1:{port}/{TOKEN}"


def configure(home: Path, url: str, **settings: object) -> None:
    values = {"desktop": False, "retries": 2, "backoff_s": 0.1, **settings}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
    with (home / "config.toml").open("a") as f:
        f.write(f"\n[alerts]\nurls = [{json.dumps(url)}]\n{lines}")


def eorch_process(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})


def deliveries(home: Path, kind: str = "failed") -> list[tuple]:
    return db_rows(home, "select d.state, d.attempts, d.channel, d.channel_key, d.last_error from alert_deliveries d "
                         "join alerts a on a.id = d.alert_id where a.kind = ?", kind)


def crash_and_kill_the_monitor(home: Path, tmp_path: Path, port: int) -> tuple[str, int]:
    """A run fails while `eorch watch` follows it; the alert channel is down, so the alert stays pending
    (retried with backoff) until the watcher is killed with SIGKILL. Returns (run id, attempts made)."""
    configure(home, secret_url(port), retries=20, backoff_s=0.5, backoff_max_s=0.5)  # ~10 s of retrying
    add_testbox(tmp_path)
    run = launch(sys.executable, "-c", "raise SystemExit(3)")
    watcher = eorch_process("watch", run["id"], "--until-done")
    try:
        rows = wait_for(lambda: [r for r in deliveries(home) if r[1] >= 1] or watcher.poll() is not None,
                        timeout=60, what="a failed attempt recorded on the pending delivery")
    finally:
        watcher.kill()
        _, err = watcher.communicate(timeout=20)
    assert watcher.returncode == -signal.SIGKILL, err
    assert SECRET not in err and TOKEN not in err
    state, attempts, channel, key, _error = deliveries(home)[0]
    assert (state, channel) == ("pending", "json://127.0.0.1") and key.startswith("url:") and len(rows) == 1
    return run["id"], attempts


def assert_no_secret_in_history(home: Path) -> None:
    with sqlite3.connect(home / "eorch.db") as conn:
        dump = "\n".join(conn.iterdump())
    assert SECRET not in dump and TOKEN not in dump


class TestKilledMonitor:
    def test_next_monitor_delivers_once_and_never_again(self, eorch_home: Path, tmp_path: Path) -> None:
        """Killed before the channel took the alert: the daemon started next delivers it exactly once; neither a
        second daemon nor `eorch watch` sends it again; `eorch alerts` shows it sent, with every attempt."""
        port = free_port()
        run_id, attempts = crash_and_kill_the_monitor(eorch_home, tmp_path, port)
        listed = eorch("alerts", "--run", run_id).stdout
        assert "json://127.0.0.1 pending" in listed and "the next monitor to start re-sends them" in listed
        receiver = Receiver(port=port)
        try:
            for _ in range(2):  # the first daemon re-sends; its restart finds nothing pending
                daemon = eorch_process("daemon")
                try:
                    wait_for(lambda: deliveries(eorch_home)[0][0] == "sent", timeout=30, what="delivery marked sent")
                    # Its monitor starts (and re-sends) as soon as it holds the lock, before it handles SIGTERM.
                    wait_for(lambda pid=daemon.pid: (eorch_home / "monitor.lock").read_text() == f"pid {pid}",
                             what="daemon lock")
                finally:
                    daemon.send_signal(signal.SIGTERM)
                    _, err = daemon.communicate(timeout=30)
                assert daemon.returncode == 0, err
                assert SECRET not in err and TOKEN not in err
            eorch("watch", run_id, "--until-done", check=False)
            failed = [m for m in receiver.received if "FAILED" in m["title"]]
            assert len(receiver.received) == 1 and len(failed) == 1, receiver.received
            assert run_id in failed[0]["message"]
        finally:
            receiver.stop()
        [alert] = json.loads(eorch("alerts", "--run", run_id, "--json").stdout)
        [delivery] = alert["deliveries"]
        assert alert["delivery"] == "sent" and delivery["ok"] and delivery["attempts"] == attempts + 1
        assert delivery["sent_at"] and delivery["channel"] == "json://127.0.0.1"
        assert_no_secret_in_history(eorch_home)

    def test_pending_older_than_the_window_expires_unsent(self, eorch_home: Path, tmp_path: Path) -> None:
        """A delivery left pending for longer than the re-send window is marked expired at the next start, and
        not sent; `eorch alerts` reports it (and `--state expired` finds it)."""
        port = free_port()
        run_id, _ = crash_and_kill_the_monitor(eorch_home, tmp_path, port)
        with (eorch_home / "config.toml").open("a") as f:
            f.write("resend_window_minutes = 30\n")
        from orchestrator.store.queries import utcnow

        long_ago = (utcnow() - timedelta(hours=2)).isoformat(sep=" ")
        with sqlite3.connect(eorch_home / "eorch.db") as conn:
            conn.execute("update alerts set created_at = ? where run_id = ?", (long_ago, run_id))
        receiver = Receiver(port=port)
        try:
            proc = eorch("watch", run_id, "--until-done", check=False)
            assert "marked expired, not sent" in proc.stderr
            assert receiver.received == []
        finally:
            receiver.stop()
        assert deliveries(eorch_home)[0][0] == "expired"
        listed = eorch("alerts").stdout
        assert "json://127.0.0.1 EXPIRED (not sent)" in listed and "1 EXPIRED" in listed
        [expired] = json.loads(eorch("alerts", "--state", "expired", "--json").stdout)
        assert expired["run_id"] == run_id and expired["delivery"] == "expired"
        assert json.loads(eorch("alerts", "--state", "pending", "--json").stdout) == []


class TestEngine:
    def test_recorded_but_unsent_is_resent_once_on_start(self, eorch_home: Path) -> None:
        """An alert recorded with its pending delivery and never sent (what a kill between the two leaves) goes
        out when the next engine starts; the receiver refuses the first attempt, the retry gets through; a
        second start, or a second call while it is in flight, sends nothing more."""
        from orchestrator.alerts.channels import AlertsConfig, AppriseChannel, ChannelEntry, Dispatcher
        from orchestrator.alerts.engine import AlertEngine
        from orchestrator.alerts.rules import HostSnapshot, evaluate_host
        from orchestrator.context import Context
        from orchestrator.store.queries import utcnow

        receiver = Receiver(refuse=1)
        ctx = Context.load()
        config = AlertsConfig(retries=3, backoff_s=0.05)

        def engine() -> AlertEngine:
            channel = AppriseChannel(ChannelEntry(url=f"json://127.0.0.1:{receiver.port}/hook"))
            return AlertEngine(ctx, Dispatcher(ctx, [channel], config))

        try:
            [alert] = evaluate_host(HostSnapshot("gpu", False, utcnow() - timedelta(minutes=9)), utcnow(), 5)
            first = engine()
            outbox = first._record(alert)  # recorded; the process "dies" before dispatching
            assert outbox is not None and len(outbox) == 1
            assert first._record(alert) is None  # de-duplicated as before
            restarted = engine()
            restarted.on_monitor_start()
            assert restarted.resend_pending() == []  # already queued here: not twice
            assert restarted.dispatcher.flush(10)
            assert len(receiver.refused) == 1 and len(receiver.received) == 1
            assert "unreachable" in receiver.received[0]["title"]
            again = engine()
            again.on_monitor_start()
            assert again.resent == [] and again.dispatcher.flush(10)
            assert len(receiver.received) == 1
        finally:
            receiver.stop()
        assert deliveries(eorch_home, "host_unreachable")[0][:2] == ("sent", 2)


class TestBadInput:
    def test_unknown_state_is_one_line(self, eorch_home: Path) -> None:
        """`eorch alerts --state` with an unknown state names the known ones in one line."""
        proc = eorch("alerts", "--state", "lost-in-space", check=False)
        assert proc.returncode != 0 and "unknown delivery state" in proc.stderr and "pending" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    def test_negative_window_is_one_line(self, eorch_home: Path) -> None:
        """A negative re-send window is a config error naming the key."""
        configure(eorch_home, "json://127.0.0.1:1/x", resend_window_minutes=-5)
        proc = eorch("alerts", "test", check=False)
        assert proc.returncode != 0 and "alerts.resend_window_minutes" in proc.stderr
        assert "greater than or equal to 0" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
