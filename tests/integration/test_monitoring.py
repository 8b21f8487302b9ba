"""Monitoring that is never silently absent: launch starts a background monitor (or says nothing will alert),
`eorch watch --all` waits for new runs, `eorch daemon install|uninstall|status` manages the user service."""

from __future__ import annotations

import json
import os
import plistlib
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import add_testbox, ctrl_c, db_rows, eorch, wait_for

from orchestrator.monitoring.lockfile import monitor_holds

EXITS_3 = "import sys, time; print('working', flush=True); time.sleep(0.5); sys.exit(3)"


def auto_start(home: Path, on: bool) -> None:
    config = home / "config.toml"
    config.write_text(config.read_text().replace("auto_start = false", f"auto_start = {str(on).lower()}"))


def status_of(home: Path, run_id: str) -> str:
    return str(db_rows(home, "select status from runs where id=?", run_id)[0][0])


class TestLaunchEnsuresFollowing:
    def test_a_background_monitor_records_the_end_and_alerts(self, eorch_home: Path, tmp_path: Path) -> None:
        """With no monitor running, launch starts one: the exit is recorded and alerted with no watch at all."""
        auto_start(eorch_home, True)
        add_testbox(tmp_path)
        out = eorch("launch", "--host", "gpu", "--json", "--", sys.executable, "-c", EXITS_3).stdout
        record = json.loads(out)
        assert record["monitor"]["state"] == "started"
        pid = int(record["monitor"]["detail"].split("(pid ")[1].split(")")[0])
        try:
            wait_for(lambda: status_of(eorch_home, record["id"]) == "failed", 90, "the background monitor's verdict")
            wait_for(lambda: db_rows(eorch_home, "select kind from alerts where run_id=?", record["id"]), 30,
                     "the failed alert")
            assert db_rows(eorch_home, "select kind from alerts where run_id=?", record["id"]) == [("failed",)]
            # Nothing left to follow: it exits by itself (until-idle), leaving no process behind.
            wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 60, "the monitor to exit")
        finally:
            if os.path.exists(f"/proc/{pid}") and not _zombie(pid):
                os.kill(pid, signal.SIGTERM)

    def test_text_output_says_who_follows(self, eorch_home: Path, tmp_path: Path) -> None:
        """The launch message names the background monitor and its log."""
        auto_start(eorch_home, True)
        out = eorch("launch", "--", sys.executable, "-c", "print('hi')").stdout
        assert "followed by a background monitor (pid" in out and "monitor.log" in out
        pid = int(out.split("(pid ")[1].split(")")[0])
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 60, "the monitor to exit")

    @pytest.mark.parametrize("how", ["flag", "config"])
    def test_opting_out_says_nothing_will_alert(self, eorch_home: Path, how: str) -> None:
        """`--no-monitor` or `[monitor] auto_start = false`: no monitor starts, and launch says so plainly."""
        auto_start(eorch_home, how == "flag")
        extra = ["--no-monitor"] if how == "flag" else []
        out = eorch("launch", *extra, "--", "sleep", "30").stdout
        run_id = out.split("launched run ")[1].split()[0]
        try:
            assert "nothing records how it ends and nothing alerts" in out
            assert "eorch watch --all" in out
            assert not (eorch_home / "monitor.log").exists()
        finally:
            eorch("cancel", run_id, check=False)

    def test_a_running_monitor_is_named_and_none_is_added(self, eorch_home: Path) -> None:
        """A monitor already holding the lock follows the new run; launch starts no second one."""
        from orchestrator.monitoring.lockfile import MonitorLock

        auto_start(eorch_home, True)
        lock = MonitorLock(eorch_home / "monitor.lock")
        lock.acquire()
        try:
            record = json.loads(eorch("launch", "--json", "--", "sleep", "30").stdout)
            assert record["monitor"] == {"state": "running",
                                         "detail": f"followed by the running monitor (pid {os.getpid()})"}
            assert not (eorch_home / "monitor.log").exists()
        finally:
            lock.release()
            eorch("cancel", record["id"], check=False)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


class TestWatchAll:
    def test_stays_up_and_picks_up_a_run_launched_later(self, eorch_home: Path, tmp_path: Path) -> None:
        """`eorch watch --all` before any launch waits, then follows and reports a run launched after it."""
        add_testbox(tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.main", "watch", "--all"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "COLUMNS": "200"})
        watchdog = threading.Timer(600, proc.kill)  # a hang guard
        watchdog.start()
        try:
            assert proc.stdout is not None
            assert "following every run" in proc.stdout.readline()
            wait_for(lambda: monitor_holds(eorch_home / "monitor.lock"), 300, "watch to hold the lock")
            run = json.loads(eorch("launch", "--host", "gpu", "--json", "--", sys.executable, "-c", EXITS_3).stdout)
            assert run["monitor"]["state"] == "running"
            seen = []
            for line in proc.stdout:
                seen.append(line)
                if f"run {run['id']}" in line and "failed" in line:
                    break
            assert any("failed, exit 3" in line for line in seen), seen
            assert proc.poll() is None  # still up after the run ended
        finally:
            watchdog.cancel()
            ctrl_c(proc)


class TestDaemonService:
    def env(self, tmp_path: Path, fake_systemctl: bool = False) -> dict[str, str]:
        env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
        if fake_systemctl:
            bin_dir = tmp_path / "bin"
            bin_dir.mkdir()
            script = bin_dir / "systemctl"
            script.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'systemctl.log'}\n"
                              "case \"$*\" in *is-enabled*) echo enabled;; *is-active*) echo active;; esac\n")
            script.chmod(0o755)
            env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        return env

    def test_install_status_uninstall_without_a_user_manager(self, eorch_home: Path, tmp_path: Path) -> None:
        """No usable `systemctl --user` here: install writes the unit and says how to enable it; status is honest."""
        env = self.env(tmp_path)
        env["PATH"] = str(Path(sys.executable).parent)  # no systemctl on this PATH
        unit = tmp_path / "xdg" / "systemd" / "user" / "eorch-daemon.service"
        before = json.loads(eorch("daemon", "status", "--json", env=env).stdout)
        assert before["installed"] is False and before["path"] == str(unit)
        out = eorch("daemon", "install", env=env).stdout
        assert f"wrote {unit}" in out and "systemctl --user enable --now eorch-daemon.service" in out
        text = unit.read_text()
        assert f"ExecStart={sys.executable} -m orchestrator.cli.main daemon" in text
        assert f'Environment="EORCH_HOME={eorch_home}"' in text
        status = json.loads(eorch("daemon", "status", "--json", env=env).stdout)
        assert status["installed"] is True and status["enabled"].startswith("unknown")
        assert status["monitor"] == "none"
        eorch("daemon", "uninstall", env=env)
        assert not unit.exists()

    def test_install_enables_through_systemctl_user(self, eorch_home: Path, tmp_path: Path) -> None:
        """Where `systemctl --user` answers, install reloads and enables --now; uninstall disables --now."""
        env = self.env(tmp_path, fake_systemctl=True)
        out = eorch("daemon", "install", env=env).stdout
        assert "enabled and started" in out
        calls = (tmp_path / "systemctl.log").read_text().splitlines()
        assert "--user daemon-reload" in calls and "--user enable --now eorch-daemon.service" in calls
        status = json.loads(eorch("daemon", "status", "--json", env=env).stdout)
        assert status["enabled"] == "enabled" and status["active"] == "active"
        eorch("daemon", "uninstall", env=env)
        assert "--user disable --now eorch-daemon.service" in (tmp_path / "systemctl.log").read_text()

    def test_the_launchd_agent_runs_this_eorch(self, eorch_home: Path) -> None:
        """The macOS agent is a valid plist that starts this interpreter's daemon with this EORCH_HOME."""
        from orchestrator.config import load_settings
        from orchestrator.monitoring.userservice import daemon_argv, render_launchd

        plist = plistlib.loads(render_launchd(load_settings()).encode())
        assert plist["ProgramArguments"] == daemon_argv()
        assert plist["EnvironmentVariables"] == {"EORCH_HOME": str(eorch_home)}
        assert plist["StandardErrorPath"] == str(eorch_home / "daemon.err.log")
