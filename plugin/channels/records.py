"""The tipline's records (pure): a channel as configured, a message or action that came in, and a
message to send. Typed between the channel parsers, the conversation and the outbox; dicts only
at their edges (Redis, HTTP)."""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Kind(str, Enum):
    TELEGRAM = "telegram"
    WHATSAPP = "whatsapp"


#: the secret fields of each kind's channel, never shown, logged or put in a job or an error
SECRET_FIELDS = {Kind.TELEGRAM: ("bot_token", "secret_token"),
                 Kind.WHATSAPP: ("access_token", "app_secret", "verify_token")}
#: the operator's fields each kind needs when it is added (the rest are made by FactSieve)
REQUIRED = {Kind.TELEGRAM: ("bot_token",), Kind.WHATSAPP: ("access_token", "app_secret", "phone_number_id")}


@dataclass(frozen=True)
class Channel:
    """One tipline: a Telegram bot or a WhatsApp business number, of one tenant."""

    id: str
    tenant: str
    kind: Kind
    name: str
    created_at: str
    #: the channel's own "sure" threshold (``plugin.channels.answer``); ``None``: the default
    threshold: float | None = None
    default_lang: str = "en"
    #: WhatsApp: the pre-approved template sent outside the 24-hour window ``{"name", "lang"}``
    template: dict[str, str] | None = None
    phone_number_id: str | None = None
    #: the secrets (``SECRET_FIELDS``) and the key users' ids are hashed with
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    user_salt: str = field(default="", repr=False)

    def user_key(self, raw_user: str) -> str:
        """The keyed hash a user is stored as (their chat id or phone number never is, beyond a
        reply owed to them)."""
        return hmac.new(self.user_salt.encode(), f"{self.id}\x1f{raw_user}".encode(), hashlib.sha256).hexdigest()[:32]

    def public(self) -> dict[str, Any]:
        """The channel as the API and the CLI show it: never a secret."""
        return {"id": self.id, "tenant": self.tenant, "kind": self.kind.value, "name": self.name,
                "created_at": self.created_at, "threshold": self.threshold, "default_lang": self.default_lang,
                "template": self.template, "phone_number_id": self.phone_number_id,
                "webhook_path": f"/v1/channels/{self.kind.value}/{self.id}"}

    def to_source(self) -> dict[str, Any]:
        return {**self.public(), "secrets": dict(self.secrets), "user_salt": self.user_salt}

    @classmethod
    def from_source(cls, src: dict[str, Any]) -> Channel:
        return cls(id=src["id"], tenant=src["tenant"], kind=Kind(src["kind"]), name=src["name"],
                   created_at=src["created_at"], threshold=src.get("threshold"),
                   default_lang=src.get("default_lang") or "en", template=src.get("template"),
                   phone_number_id=src.get("phone_number_id"), secrets=dict(src.get("secrets") or {}),
                   user_salt=src.get("user_salt") or "")


class Action(str, Enum):
    MESSAGE = "message"     # a claim to check (text, a photo, or both; forwarded or not)
    FEEDBACK = "feedback"   # "helped" / "did not help" on an answer
    STOP = "stop"           # /stop, STOP: no more messages, forget the user
    START = "start"         # /start: the greeting
    UNSUPPORTED = "unsupported"  # a voice note, a video, a file…: told what the tipline reads


class Outcome(str, Enum):
    """How a request ended, as the channel's events record it (Meedan Check's names)."""

    ANSWERED = "answered"            # answered at once, sure
    RELEVANT = "relevant"            # the user said the answer helped
    IRRELEVANT = "irrelevant"        # ... that it did not
    QUEUED = "queued"                # not sure: the desk will look, the user waits
    NO_RESULT = "no_result"          # nothing matched: the desk will look
    DESK_ANSWERED = "desk_answered"  # the desk's decision reached the user (or could not: ``sent``)
    TIMEOUT = "timeout"              # "did it help?" went unanswered for FACTSIEVE_TIPLINE_FEEDBACK_TIMEOUT_S


@dataclass(frozen=True)
class Inbound:
    """One thing a user did, as a channel's update says it."""

    action: Action
    #: what makes a retried update the same one (Telegram's update_id, WhatsApp's message id)
    key: str
    #: the user's id on the channel (chat id, phone number): hashed before it is stored
    user: str
    at: float
    lang: str | None = None
    text: str = ""
    #: the channel's reference to a photo (Telegram file_id, WhatsApp media id)
    media: str | None = None
    forwarded: bool = False
    #: FEEDBACK: the post it is about and whether it helped
    post_id: str | None = None
    helped: bool | None = None


@dataclass(frozen=True)
class Button:
    id: str
    title: str


@dataclass(frozen=True)
class Outgoing:
    """One message to a user: text (with reply buttons), or a WhatsApp template."""

    text: str
    buttons: tuple[Button, ...] = ()
    #: a template (name, language, body parameters) instead of free text: outside WhatsApp's
    #: 24-hour customer-service window
    template: dict[str, Any] | None = None
