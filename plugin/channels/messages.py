"""The tipline's messages, composed (pure): the answer with its fact-checks and "did it help?",
"we will look into it", the desk's answer (free text inside WhatsApp's 24-hour window, the
tenant's template outside it, nothing without one), the greeting, thanks and the stop's last word.
Words from ``plugin.channels.strings``."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plugin.channels import strings
from plugin.channels.records import Button, Channel, Kind, Outgoing
from plugin.channels.whatsapp import WINDOW_S
from plugin.channels.wire import feedback_id

#: a fact-check's fields an answer shows, and how long each may be
SHOWN = {"claim": 300, "rating": 60, "publisher": 80, "url": 500}


def factcheck_line(words: Mapping[str, Any], tenant: str, lang: str, fc: Mapping[str, Any]) -> str:
    vals = {k: (str(fc.get(k) or "").strip()[:n] or "—") for k, n in SHOWN.items()}
    if vals["publisher"] == "—":
        vals["publisher"] = str(fc.get("domain") or "—")[:80]
    return strings.text(words, tenant, lang, "result_line", **vals)


def _asking(words: Mapping[str, Any], tenant: str, lang: str, lines: list[str], post_id: str) -> Outgoing:
    """``lines``, then "did it help?" with its two buttons (their ids name the post)."""
    return Outgoing("\n".join([*lines, "", strings.text(words, tenant, lang, "ask_helped")]),
                    (Button(feedback_id(post_id, True), strings.text(words, tenant, lang, "yes")),
                     Button(feedback_id(post_id, False), strings.text(words, tenant, lang, "no"))))


def answer(words: Mapping[str, Any], tenant: str, lang: str, factchecks: Sequence[Mapping[str, Any]],
           post_id: str) -> Outgoing:
    """The sure reply: the fact-checks, then the question with its two buttons."""
    return _asking(words, tenant, lang, [strings.text(words, tenant, lang, "results"),
                                         *(factcheck_line(words, tenant, lang, fc) for fc in factchecks)], post_id)


def plain(words: Mapping[str, Any], tenant: str, lang: str, key: str) -> Outgoing:
    return Outgoing(strings.text(words, tenant, lang, key))


def window_open(channel: Channel, last_inbound: float | None, now: float) -> bool:
    """Whether free text may be sent: always on Telegram; on WhatsApp within 24 hours of the
    user's last message."""
    if channel.kind is not Kind.WHATSAPP:
        return True
    return last_inbound is not None and now - last_inbound < WINDOW_S


def desk_answer(words: Mapping[str, Any], channel: Channel, lang: str, fc: Mapping[str, Any],
                post_id: str, open_window: bool) -> Outgoing | None:
    """The desk's answer to someone who asked: free text with "did it help?" inside the window;
    outside it the channel's template (its body parameters: the claim, the rating, the link), or
    ``None`` when the channel has none (nothing may be sent)."""
    if open_window:
        return _asking(words, channel.tenant, lang, [strings.text(words, channel.tenant, lang, "desk_answer"),
                                                     factcheck_line(words, channel.tenant, lang, fc)], post_id)
    if not channel.template:
        return None
    params = [str(fc.get("claim") or "")[:300], str(fc.get("rating") or "—")[:60], str(fc.get("url") or "")[:500]]
    return Outgoing("", template={"name": channel.template["name"], "lang": channel.template.get("lang") or "en",
                                  "params": params})
