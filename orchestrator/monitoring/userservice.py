"""The eorch daemon as a user service: the systemd user unit or the launchd agent from deploy/, for this user.

``install`` renders the unit from deploy/ with this interpreter and this ``$EORCH_HOME`` and writes it
where the service manager looks (``$XDG_CONFIG_HOME/systemd/user``, ``~/Library/LaunchAgents``), then
enables it when the manager answers; ``status`` says what is installed, enabled and running, and who holds
the monitor lock, without guessing: a manager that cannot be asked is reported as such.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.config import Settings
from orchestrator.monitoring.lockfile import holder_of, monitor_holds

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SYSTEMD_UNIT = "eorch-daemon.service"
LAUNCHD_LABEL = "dev.eorch.daemon"
MANAGER_TIMEOUT_S = 20


@dataclass(frozen=True)
class ServiceReport:
    manager: str  # "systemd" | "launchd"
    path: Path
    installed: bool
    enabled: str  # "enabled" / "disabled" / "unknown: why"
    active: str  # "active" / "inactive" / "unknown: why"
    monitor: str  # who holds the monitor lock, or "none"
    message: str = ""


def manager(env: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    return "launchd" if (platform or sys.platform) == "darwin" else "systemd"


def unit_path(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if manager(env, platform) == "launchd":
        return home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return config / "systemd" / "user" / SYSTEMD_UNIT


def daemon_argv() -> list[str]:
    """How the service starts the daemon: this interpreter, so the unit runs the eorch that installed it."""
    return [sys.executable, "-m", "orchestrator.cli.main", "daemon"]


def render_systemd(settings: Settings) -> str:
    text = (DEPLOY / "systemd" / SYSTEMD_UNIT).read_text()
    text = re.sub(r"(?m)^# Adjust to where eorch is installed.*\n", "", text)
    exec_line = f'ExecStart={shlex.join(daemon_argv())}\nEnvironment="EORCH_HOME={settings.home}"'
    return re.sub(r"(?m)^ExecStart=.*$", lambda _m: exec_line, text)


def render_launchd(settings: Settings) -> str:
    text = (DEPLOY / "launchd" / f"{LAUNCHD_LABEL}.plist").read_text()
    args = "\n".join(f"    <string>{_xml(a)}</string>" for a in daemon_argv())
    text = re.sub(r"(?s)(<key>ProgramArguments</key>\s*<array>\n).*?(\s*</array>)", lambda m: m.group(1) + args
                  + m.group(2), text)
    env = (f"  <key>EnvironmentVariables</key>\n  <dict>\n    <key>EORCH_HOME</key>\n"
           f"    <string>{_xml(str(settings.home))}</string>\n  </dict>\n")
    text = text.replace("  <key>RunAtLoad</key>", env + "  <key>RunAtLoad</key>", 1)
    for stream in ("out", "err"):
        text = text.replace(f"/tmp/eorch-daemon.{stream}.log", _xml(str(settings.home / f"daemon.{stream}.log")))
    return text


def _xml(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _ask(argv: list[str]) -> tuple[int, str]:
    """Run a service-manager command: (exit status, its one-line answer); 127 when it is not installed."""
    if shutil.which(argv[0]) is None:
        return 127, f"{argv[0]} not found"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=MANAGER_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 126, str(err)
    lines = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return done.returncode, lines[0] if lines else ""


def _systemd_usable() -> tuple[bool, str]:
    rc, answer = _ask(["systemctl", "--user", "show-environment"])
    return rc == 0, answer


def install(settings: Settings, *, enable: bool = True) -> ServiceReport:
    kind = manager()
    path = unit_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_launchd(settings) if kind == "launchd" else render_systemd(settings))
    message = f"wrote {path}"
    if not enable:
        return _report(settings, kind, path, f"{message}; not enabled (--no-enable)")
    if kind == "systemd":
        usable, why = _systemd_usable()
        if not usable:
            return _report(settings, kind, path, f"{message}; systemctl --user is not available here ({why}): enable it "
                           f"with `systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}`")
        for argv in (["systemctl", "--user", "daemon-reload"],
                     ["systemctl", "--user", "enable", "--now", SYSTEMD_UNIT]):
            rc, answer = _ask(argv)
            if rc != 0:
                return _report(settings, kind, path, f"{message}; `{shlex.join(argv)}` failed: {answer}")
        return _report(settings, kind, path, f"{message}; enabled and started (systemctl --user)")
    rc, answer = _ask(["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)])
    if rc != 0:
        return _report(settings, kind, path, f"{message}; `launchctl bootstrap` failed ({answer}): load it with "
                       f"`launchctl bootstrap gui/$(id -u) {path}`")
    return _report(settings, kind, path, f"{message}; loaded (launchctl)")


def uninstall(settings: Settings) -> ServiceReport:
    kind = manager()
    path = unit_path()
    notes = []
    if kind == "systemd":
        usable, why = _systemd_usable()
        if usable:
            rc, answer = _ask(["systemctl", "--user", "disable", "--now", SYSTEMD_UNIT])
            notes.append("disabled and stopped" if rc == 0 else f"disable failed: {answer}")
        else:
            notes.append(f"systemctl --user is not available here ({why}): nothing to stop")
    else:
        rc, answer = _ask(["launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"])
        notes.append("unloaded" if rc == 0 else f"launchctl bootout: {answer}")
    if path.exists():
        path.unlink()
        notes.insert(0, f"removed {path}")
    else:
        notes.insert(0, f"no unit at {path}")
    if kind == "systemd" and _systemd_usable()[0]:
        _ask(["systemctl", "--user", "daemon-reload"])
    return _report(settings, kind, path, "; ".join(notes))


def status(settings: Settings) -> ServiceReport:
    return _report(settings, manager(), unit_path(), "")


def _report(settings: Settings, kind: str, path: Path, message: str) -> ServiceReport:
    if kind == "systemd":
        usable, why = _systemd_usable()
        if usable:
            enabled = _ask(["systemctl", "--user", "is-enabled", SYSTEMD_UNIT])[1] or "unknown"
            active = _ask(["systemctl", "--user", "is-active", SYSTEMD_UNIT])[1] or "unknown"
        else:
            enabled = active = f"unknown (systemctl --user: {why})"
    else:
        rc, answer = _ask(["launchctl", "print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"])
        enabled = "loaded" if rc == 0 else f"not loaded ({answer})"
        active = enabled
    monitor = "none"
    if monitor_holds(settings.monitor_lock):
        monitor = holder_of(settings.monitor_lock) or "another process"
    return ServiceReport(kind, path, path.exists(), enabled, active, monitor, message)
