"""``api_checks.py tipline``: how long a tipline user waits for the first reply, through the real
API (gunicorn) and one Celery worker, with the fake Telegram API (``plugin.lab.channel_fakes``)
in this process recording when each message arrives.

Messages are sent one at a time (a user waits for their answer): text messages (the sample
corpora's queries) and photos (the same texts drawn on a card, as a screenshot of a post). The time
is from the update's POST to the fake receiving the reply: the first reply (for a photo, the
"checking" note the API queues before the match), and for a photo also the answer. The first
two messages of each kind warm the worker up and are not counted.
"""
from __future__ import annotations

import time
import uuid
from types import ModuleType
from typing import Any

import requests

from plugin.lab.channel_fakes import ChannelFakes
from plugin.lab.evaluate.metrics import percentile

WARM = 2


def stats(values: list[float]) -> dict[str, float | int]:
    ms = [v * 1000 for v in values]
    return {"n": len(ms), "p50_ms": round(percentile(ms, 0.5), 1), "p95_ms": round(percentile(ms, 0.95), 1),
            "max_ms": round(max(ms), 1) if ms else 0.0}


def update(chat: int, text: str | None, photo: str | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"message_id": 1, "from": {"id": chat, "is_bot": False, "first_name": "B", "language_code": "en"},
                           "chat": {"id": chat, "type": "private"}, "date": int(time.time())}
    if photo:
        msg["photo"] = [{"file_id": photo, "file_unique_id": photo, "width": 800, "height": 600}]
    else:
        msg["text"] = text
    return {"update_id": uuid.uuid4().int % 10**9, "message": msg}


def one(dep: Any, fakes: ChannelFakes, ch: dict[str, Any], text: str | None, photo: str | None,
        timeout_s: float) -> tuple[float, float | None, str]:
    """``(first reply s, answer s or None, the answer's first line)`` of one message."""
    chat = uuid.uuid4().int % 10**9
    t0 = time.monotonic()
    resp = requests.post(f"{dep.base}{ch['webhook_path']}", json=update(chat, text, photo), timeout=30,
                         headers={"X-Telegram-Bot-Api-Secret-Token": ch["secret_token"]})
    resp.raise_for_status()
    wanted = 2 if photo else 1
    deadline = t0 + timeout_s
    while len(got := fakes.to(chat, timed=True)) < wanted:
        if time.monotonic() > deadline:
            raise SystemExit(f"no reply within {timeout_s} s (worker logs in /tmp/factsieve-worker*)")
        time.sleep(0.02)
    first = got[0][0] - t0
    answer = got[1][0] - t0 if photo else None
    return first, answer, got[-1][1]["text"].split("\n", 1)[0]


def run(checks: ModuleType, texts: list[str], n_text: int, n_photo: int, timeout_s: float) -> dict[str, Any]:
    from tests.image_drawing import card, encode

    fakes = ChannelFakes()
    dep = checks.Deployment(1, telegram_api_url=fakes.telegram_url, whatsapp_api_url=fakes.whatsapp_url)
    procs = checks.start_workers(dep, 1, queues="match,webhooks")
    try:
        channel, made = dep.services.channels.create("telegram", "bench", "bench bot", {"bot_token": "1:bench"})
        ch = {**channel.public(), **made}
        firsts, kinds = [], {"answered": 0, "queued": 0}
        for i, text in enumerate(texts[: n_text + WARM]):
            first, _, line = one(dep, fakes, ch, text, None, timeout_s)
            if i >= WARM:
                firsts.append(first)
                kinds["answered" if line.startswith("Fact-checkers") else "queued"] += 1
        photo_first, photo_answer = [], []
        for i, text in enumerate(texts[: n_photo + WARM]):
            fid = f"bench{uuid.uuid4().hex[:10]}"
            fakes.files[fid] = encode(card(text[:200]))
            first, answer, _ = one(dep, fakes, ch, None, fid, timeout_s)
            if i >= WARM:
                photo_first.append(first)
                photo_answer.append(answer or 0.0)
        return {"what": "tipline message → first reply through the fake Telegram API; gunicorn API, one Celery "
                        "worker (solo pool), messages one at a time",
                "corpus_factchecks": dep.corpus, "text_first_reply": stats(firsts), "text_replies": kinds,
                "photo_first_reply": stats(photo_first), "photo_answer": stats(photo_answer),
                "aims_ms": {"text_p95": 5000, "photo_p95": 15000}}
    finally:
        checks.stop(procs)
        dep.close()
        fakes.close()
