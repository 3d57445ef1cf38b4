"""The tipline channels' request and response models (``api.routes_channels``)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.schemas import Request, Response


class ChannelTemplate(Request):
    name: str = Field(min_length=1, max_length=512, description="a pre-approved WhatsApp message template")
    lang: str = Field(default="en", min_length=2, max_length=15, description="its language code, e.g. en_US")


class ChannelIn(Request):
    kind: Literal["telegram", "whatsapp"]
    name: str = Field(min_length=1, max_length=200)
    tenant: str = Field(default="default", min_length=1, max_length=64,
                        description="the newsroom whose desk, claims and learning the channel uses")
    bot_token: str | None = Field(default=None, max_length=200, description="Telegram: the bot's token (BotFather)")
    access_token: str | None = Field(default=None, max_length=1000, description="WhatsApp: a system user's access token")
    app_secret: str | None = Field(default=None, max_length=200, description="WhatsApp: the Meta app's secret (signatures)")
    phone_number_id: str | None = Field(default=None, max_length=64, description="WhatsApp: the business number's id")
    default_lang: str = Field(default="en", min_length=2, max_length=10,
                              description="the replies' language when the message's has no strings")
    threshold: float | None = Field(default=None, ge=0, le=1,
                                    description="answer without a person from this calibrated confidence "
                                                "(default: plugin/channels/tipline.json's)")
    template: ChannelTemplate | None = Field(default=None, description="WhatsApp: the desk's answers outside "
                                                                       "the 24-hour window use it")


class ChannelOut(Response):
    id: str
    tenant: str
    kind: str
    name: str
    created_at: str
    threshold: float | None = None
    default_lang: str
    template: dict[str, Any] | None = None
    phone_number_id: str | None = None
    webhook_path: str = Field(description="where the channel's platform sends updates (under the API's base URL)")


class ChannelCreated(ChannelOut):
    secret_token: str | None = Field(default=None, description="Telegram: pass it to setWebhook's secret_token; "
                                                               "shown only here")
    verify_token: str | None = Field(default=None, description="WhatsApp: the webhook's verify token; shown only here")


class ChannelList(Response):
    channels: list[ChannelOut]


class ChannelEvent(Response):
    post_id: str
    user: str = Field(description="the user's keyed hash (never their chat id or number)")
    outcome: str
    at: str


class ChannelDetail(ChannelOut):
    events: list[ChannelEvent] = Field(description="the newest requests' outcomes")


class UpdateTaken(Response):
    ok: bool = True
    taken: int = Field(description="messages and actions taken from this update")
    repeated: int = Field(description="ones taken before (a retried update): processed once")
    method: str | None = Field(None, description="Telegram only: a Bot API call made by this reply (a "
                               "webhook's answer may carry one): answerCallbackQuery for a button "
                               "press, which stops the user's app waiting")
    callback_query_id: str | None = Field(None, description="with method: the button press answered")
