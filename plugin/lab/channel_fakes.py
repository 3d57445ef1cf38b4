"""A fake Telegram Bot API and a fake WhatsApp Cloud API in one small HTTP server on 127.0.0.1:
they record what FactSieve sends (with when: ``time.monotonic``), answer as the official docs
show, and serve the photos a test or a benchmark put there (the end-to-end tests,
``scripts/bench_tipline.py``). The deployment under test points FACTSIEVE_TELEGRAM_API_URL at ``<origin>/tg`` and
FACTSIEVE_WHATSAPP_API_URL at ``<origin>/wa/v21.0``.

``rate_limit(n)`` makes the next ``n`` sends answer as each API does when rate-limited
(Telegram: 429 with ``parameters.retry_after``; WhatsApp: 400 with error code 130429)."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChannelFakes:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.limited = 0
        fakes = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, code: int, body: Any, kind: str = "application/json") -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw or b"{}")
                m = re.fullmatch(r"/tg/bot([^/]+)/(\w+)", self.path)
                if m:
                    token, method = m.groups()
                    if method == "getFile":
                        fid = body.get("file_id")
                        if fid not in fakes.files:
                            return self._reply(400, {"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"})
                        return self._reply(200, {"ok": True, "result": {"file_id": fid, "file_path": f"photos/{fid}.png"}})
                    if method == "sendMessage" and fakes._limit():
                        return self._reply(429, {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1",
                                                 "parameters": {"retry_after": 1}})
                    fakes._record("telegram", method, token, body, dict(self.headers))
                    return self._reply(200, {"ok": True, "result": {"message_id": len(fakes.sent), "chat": {"id": body.get("chat_id")}}})
                m = re.fullmatch(r"/wa/v21\.0/([^/]+)/messages", self.path)
                if m:
                    if fakes._limit():
                        return self._reply(400, {"error": {"message": "(#130429) Rate limit hit", "type": "OAuthException",
                                                           "code": 130429, "fbtrace_id": "Afake"}})
                    fakes._record("whatsapp", "messages", m.group(1), body, dict(self.headers))
                    return self._reply(200, {"messaging_product": "whatsapp", "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
                                             "messages": [{"id": f"wamid.fake{len(fakes.sent)}"}]})
                self._reply(404, {"ok": False, "error_code": 404, "description": "Not Found"})

            def do_GET(self) -> None:  # noqa: N802
                m = re.fullmatch(r"/tg/file/bot[^/]+/photos/([^/]+)\.png", self.path)
                if m and m.group(1) in fakes.files:
                    return self._reply(200, fakes.files[m.group(1)], "image/png")
                m = re.fullmatch(r"/wa/v21\.0/([^/?]+)", self.path)
                if m and m.group(1) in fakes.files and self.headers.get("Authorization", "").startswith("Bearer "):
                    return self._reply(200, {"url": f"{fakes.origin}/wa/media/{m.group(1)}", "mime_type": "image/png",
                                             "id": m.group(1), "file_size": len(fakes.files[m.group(1)])})
                m = re.fullmatch(r"/wa/media/([^/]+)", self.path)
                if m and m.group(1) in fakes.files and self.headers.get("Authorization", "").startswith("Bearer "):
                    return self._reply(200, fakes.files[m.group(1)], "image/png")
                self._reply(404, {"error": {"message": "not found", "code": 100}})

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.telegram_url = f"{self.origin}/tg"
        self.whatsapp_url = f"{self.origin}/wa/v21.0"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _limit(self) -> bool:
        with self.lock:
            if self.limited > 0:
                self.limited -= 1
                return True
            return False

    def _record(self, kind: str, method: str, who: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self.lock:
            self.sent.append({"kind": kind, "method": method, "who": who, "body": body, "headers": headers,
                              "at": time.monotonic()})

    def rate_limit(self, n: int) -> None:
        with self.lock:
            self.limited = n

    def to(self, chat: str | int, *, timed: bool = False) -> list[Any]:
        """What was sent to a Telegram chat id or a WhatsApp number, oldest first (``timed``:
        ``(monotonic time, body)`` pairs)."""
        with self.lock:
            return [(s["at"], s["body"]) if timed else s["body"] for s in self.sent
                    if str(s["body"].get("chat_id") or s["body"].get("to")) == str(chat) and s["method"] in ("sendMessage", "messages")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
