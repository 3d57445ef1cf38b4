"""The tipline fields of the one ``plugin.settings.Settings`` (a section of it, split out for size:
``Settings`` inherits them; nothing builds this class on its own)."""
from __future__ import annotations

from pydantic import BaseModel


class ChannelSettings(BaseModel):
    """``FACTSIEVE_TELEGRAM_*``, ``FACTSIEVE_WHATSAPP_*``, ``FACTSIEVE_TIPLINE_*`` (read through
    ``Settings``; ``plugin.channels``)."""

    #: Telegram's Bot API and WhatsApp's Cloud API (with its version): the channels' calls go
    #: here; tests and staging point them at fakes. Trusted as the operator's (a loopback fake
    #: is allowed), and never one of FactSieve's own services.
    telegram_api_url: str = "https://api.telegram.org"
    whatsapp_api_url: str = "https://graph.facebook.com/v21.0"
    #: A JSON file of the tenants' own tipline strings (``plugin/channels/strings.json``'s shape),
    #: over the packaged ones.
    tipline_strings_path: str | None = None
    #: An answer's "did it help?" unanswered this long is the request's ``timeout`` outcome
    #: (recorded by the workers' sweeper; nothing is sent to the user).
    tipline_feedback_timeout_s: float = 24 * 3600
