"""`eorch alerts mute|unmute`: a muted run's crash sends nothing, an unmuted one's alerts as before; the channels
listed without their tokens, and a test alert sent to one channel only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import eorch
from test_alerts import CRASH, Receiver, alerts_of, configure_alerts, receiver  # noqa: F401 - fixture
from test_spine import add_testbox, launch


class TestMute:
    def test_muted_crash_sends_nothing_unmuted_sends(self, eorch_home: Path, tmp_path: Path,
                                                     receiver: Receiver) -> None:  # noqa: F811
        """Two runs crash while watched: the muted one raises and sends no alert, the other its `failed` alert."""
        configure_alerts(eorch_home, receiver.url())
        add_testbox(tmp_path)
        muted = launch(sys.executable, "-c", CRASH, extra=("--name", "muted-crash"))
        loud = launch(sys.executable, "-c", CRASH, extra=("--name", "loud-crash"))
        out = eorch("alerts", "mute", muted["id"]).stdout
        assert f"alerts of run {muted['id']} (muted-crash) muted" in out
        assert "alerts muted since" in eorch("show", muted["id"]).stdout
        eorch("watch", muted["id"], loud["id"], "--until-done", check=False)
        sent = [f"{m['title']} {m['message']}" for m in receiver.received]
        assert any("loud-crash FAILED" in m and loud["id"] in m for m in sent), sent
        assert not any("muted-crash" in m or muted["id"] in m for m in sent), sent
        assert alerts_of(muted["id"]) == [] and [a["kind"] for a in alerts_of(loud["id"])] == ["failed"]
        eorch("alerts", "unmute", muted["id"])
        assert json.loads(eorch("show", muted["id"], "--json").stdout)["alerts_muted_at"] is None
        assert "alerts muted" not in eorch("show", muted["id"]).stdout

    def test_unknown_run_is_one_line(self, eorch_home: Path) -> None:
        out = eorch("alerts", "mute", "nosuchrun", check=False)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "unknown run 'nosuchrun'" in out.stderr


class TestChannels:
    def test_listed_without_tokens_and_tested_one_by_one(self, eorch_home: Path, receiver: Receiver) -> None:  # noqa: F811
        """`alerts channels` shows no token of a URL; `alerts test --channel KEY` sends to that channel only."""
        secret = "T0pS3cretT0ken"
        configure_alerts(eorch_home, receiver.url(f"hook-{secret}"), f"json://user:{secret}@127.0.0.1:1/x")
        listed = eorch("alerts", "channels").stdout
        channels = json.loads(eorch("alerts", "channels", "--json").stdout)
        assert secret not in listed and secret not in json.dumps(channels)
        assert [c["name"] for c in channels] == ["json://127.0.0.1", "json://127.0.0.1"]
        assert channels[0]["key"] != channels[1]["key"] and channels[0]["kinds"] is None
        out = eorch("alerts", "test", "--channel", channels[0]["key"])
        assert out.stdout.strip() == "json://127.0.0.1: delivered"
        assert [m["title"] for m in receiver.received] == ["eorch: test alert"]
        bad = eorch("alerts", "test", "--channel", "nope", check=False)
        assert bad.returncode == 2 and "no alert channel 'nope'" in bad.stderr
