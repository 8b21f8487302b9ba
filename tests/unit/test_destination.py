"""Destinations as users type them for `eorch host add`: every form ssh accepts, and clear refusals."""

from __future__ import annotations

import pytest

from orchestrator.core.destination import Destination, parse_destination
from orchestrator.errors import UsageError


class TestForms:
    @pytest.mark.parametrize("text, port, expected", [
        ("gpu-box", None, Destination(None, "gpu-box", None)),
        ("me@gpu-box", None, Destination("me", "gpu-box", None)),
        ("me@gpu-box", 2222, Destination("me", "gpu-box", 2222)),
        ("127.0.0.1", 2222, Destination(None, "127.0.0.1", 2222)),
        ("root@10.0.0.7", None, Destination("root", "10.0.0.7", None)),
        ("testbox", None, Destination(None, "testbox", None)),  # an ssh-config alias is a host name here
        ("a.b@c@gpu-box", None, Destination("a.b@c", "gpu-box", None)),  # ssh splits at the last '@'
        ("me@[::1]", 22, Destination("me", "::1", 22)),
        ("me@::1", None, Destination("me", "::1", None)),
        ("ssh://me@gpu-box:2222", None, Destination("me", "gpu-box", 2222)),
        ("ssh://gpu-box", None, Destination(None, "gpu-box", None)),
        ("ssh://me@gpu-box:2222/", 2222, Destination("me", "gpu-box", 2222)),
        ("SSH://me@[::1]:2200", None, Destination("me", "::1", 2200)),
        ("  me@gpu-box ", None, Destination("me", "gpu-box", None)),
    ])
    def test_each_form_ssh_accepts_is_understood(self, text: str, port: int | None, expected: Destination) -> None:
        """host, user@host, an IP, an alias, ssh://user@host:port: user, host and port come out apart."""
        assert parse_destination(text, port) == expected

    def test_login_is_the_stored_user_at_host(self) -> None:
        """The stored destination is [user@]host; the port is kept apart."""
        assert parse_destination("ssh://me@gpu-box:2222").login == "me@gpu-box"
        assert parse_destination("gpu-box").login == "gpu-box"


class TestRefusals:
    @pytest.mark.parametrize("text, port, words", [
        ("", None, "host is empty"),
        ("me@", None, "host is empty"),
        ("@gpu-box", None, "user is empty"),
        ("-oProxyCommand=touch /tmp/x", None, "characters ssh does not accept"),
        ("me@gpu box", None, "characters ssh does not accept"),
        ("me@gpu-box;id", None, "characters ssh does not accept"),
        ("ssh://me@gpu-box:2222", 2200, "disagrees with --port 2200"),
        ("ssh://me@gpu-box:99999", None, "99999"),
        ("ssh://me@gpu-box/some/path", None, "ssh://[user@]host[:port], nothing more"),
        ("ssh://me:secret@gpu-box", None, "a password in an ssh URL is not accepted"),
        ("http://gpu-box", None, "only ssh:// URLs"),
        ("gpu-box", 0, "use 1-65535"),
        ("gpu-box", 70000, "use 1-65535"),
    ])
    def test_a_bad_destination_says_what_is_wrong(self, text: str, port: int | None, words: str) -> None:
        """Each refusal is a UsageError naming the problem (exit 2 on the CLI, nothing stored)."""
        with pytest.raises(UsageError) as err:
            parse_destination(text, port)
        assert words in str(err.value)
        assert "secret" not in str(err.value)
