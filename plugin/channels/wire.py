"""What both channels' wire formats share (pure): a call's judged answer, the feedback buttons'
ids, and the words that stop a user."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: what a user sends to stop (case-insensitive, the whole message)
STOP_WORDS = frozenset({"/stop", "stop", "unsubscribe", "parar", "detener", "중지", "توقف"})


def is_stop(text: str) -> bool:
    return text.strip().split("@")[0].lower() in STOP_WORDS


@dataclass(frozen=True)
class Result:
    """A channel API's answer: sent, or not (``retry_in`` seconds from now when worth another
    attempt: ``0`` for the outbox's own backoff); ``blocked``: the user blocked the bot (stop)."""

    ok: bool
    retry_in: float | None = None
    why: str = ""
    blocked: bool = False
    result: Any = None


def feedback_id(post_id: str, helped: bool) -> str:
    """The id of an answer's "helped" / "did not help" button."""
    return f"h{int(helped)}:{post_id}"


def feedback_of(button_id: str) -> tuple[str, bool] | None:
    """``(post_id, helped)`` of a feedback button's id, ``None`` for anything else."""
    if len(button_id) < 4 or button_id[0] != "h" or button_id[1] not in "01" or button_id[2] != ":":
        return None
    return button_id[3:], button_id[1] == "1"
