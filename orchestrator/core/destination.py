"""An ssh destination as the user types it: ``host``, ``user@host``, an ssh-config alias, an IP, or
``ssh://[user@]host[:port]``; pure parsing, no I/O.

What ``ssh`` itself accepts is the rule: the user is what comes before the last ``@``, an alias is just a
host name that the ssh config resolves later, and a port comes from ``--port`` or the URL (not both,
unless they agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from orchestrator.errors import UsageError

_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f/\\'\"`$;&|<>(){}*?!#,]")


@dataclass(frozen=True)
class Destination:
    user: str | None
    host: str  # a name, an alias or an IP address (IPv6 without brackets)
    port: int | None

    @property
    def login(self) -> str:
        """``[user@]host``: the stored form, and what ``ssh -p PORT`` takes."""
        return f"{self.user}@{self.host}" if self.user else self.host


def _check_port(port: int | None, text: str) -> int | None:
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"bad port {port} in {text!r}: use 1-65535")
    return port


def _check_part(what: str, value: str, text: str) -> str:
    if not value:
        raise UsageError(f"bad destination {text!r}: the {what} is empty; use [user@]host or ssh://user@host:port")
    if value.startswith("-") or _FORBIDDEN.search(value):
        raise UsageError(f"bad destination {text!r}: the {what} {value!r} has characters ssh does not accept "
                         "in a host or user name")
    return value


def _from_url(text: str) -> tuple[str | None, str, int | None]:
    try:
        url = urlsplit(text)
        url_port = url.port
    except ValueError as err:
        raise UsageError(f"bad destination {text!r}: {err}; use ssh://user@host:port") from err
    if url.password is not None:  # not echoed: it is a secret
        raise UsageError("bad destination: a password in an ssh URL is not accepted; eorch logs in with keys "
                         "(ssh://user@host:port)")
    if url.path not in ("", "/") or url.query or url.fragment:
        raise UsageError(f"bad destination {text!r}: an ssh URL is ssh://[user@]host[:port], nothing more")
    return (unquote(url.username) if url.username is not None else None), (url.hostname or ""), url_port


def parse_destination(text: str, port: int | None = None) -> Destination:
    """The destination of ``eorch host add NAME DEST [--port N]``; UsageError says what is wrong."""
    text = text.strip()
    _check_port(port, f"--port {port}")
    if text.lower().startswith("ssh://"):
        user, host, url_port = _from_url(text)
        _check_port(url_port, text)
        if url_port is not None and port is not None and url_port != port:
            raise UsageError(f"the port in {text!r} ({url_port}) disagrees with --port {port}; give one")
        port = port if port is not None else url_port
    elif "://" in text:
        raise UsageError(f"bad destination {text!r}: only ssh:// URLs are understood")
    else:
        at = text.rfind("@")
        user, host = (text[:at], text[at + 1:]) if at >= 0 else (None, text)
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
    if user is not None:
        _check_part("user", user, text)
    _check_part("host", host, text)
    return Destination(user, host, port)
