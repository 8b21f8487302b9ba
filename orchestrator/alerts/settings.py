"""The alert channels as a user may see them: printable names (``redact_url``), the kinds each takes, and what
sends them. Never a URL: a channel's URL carries its token."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.context import Context


@dataclass(frozen=True)
class ChannelInfo:
    key: str  # alertoutbox.url_key: names the channel, reveals nothing
    name: str  # redacted
    via: str  # "apprise" or "notify-send"
    kinds: tuple[str, ...] | None  # None: every kind

    @property
    def kinds_text(self) -> str:
        return ", ".join(self.kinds) if self.kinds is not None else "all"


def channel_infos(ctx: Context, env: Mapping[str, str] | None = None) -> list[ChannelInfo]:
    """The configured channels (config.toml's ``[alerts]`` and EORCH_ALERT_URLS), in the order alerts go out."""
    from orchestrator.alerts.channels import DesktopChannel, configured_channels

    return [ChannelInfo(c.key, c.name, "notify-send" if isinstance(c, DesktopChannel) else "apprise",
                        tuple(c.kinds) if c.kinds is not None else None)
            for c in configured_channels(ctx, env)]
