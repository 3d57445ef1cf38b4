"""A real HTTP server on 127.0.0.1 for tests that fetch (images, feeds): each GET is answered by
``answer(path, headers) -> (status, headers, body)``."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes]]


@contextmanager
def serving(answer: Answer) -> Iterator[Any]:
    """The running server, with ``origin`` (``http://127.0.0.1:<port>``); shut down after."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            status, headers, body = answer(self.path, dict(self.headers))
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.origin = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
