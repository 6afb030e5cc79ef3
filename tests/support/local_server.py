"""A recording http.server on 127.0.0.1 for the Label Studio client's hostile cases (redirects, echoed headers):
used by tests/thumb/test_hostile.py and benchmarks/hostile_probes.py."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Server:
    """An http.server on 127.0.0.1 in a thread; ``handle(handler, body)`` answers each request; ``received`` lists
    ``(method, path, headers)`` of every request that arrived."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler, bytes], None]) -> None:
        outer = self
        self.received: list[tuple[str, str, dict[str, str]]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.received.append((self.command, self.path, dict(self.headers)))
                handle(self, body)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(handler: BaseHTTPRequestHandler, status: int, payload, reason: str | None = None) -> None:
    """A JSON (or raw bytes) answer with ``status`` and its reason phrase."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status, reason)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def redirect(handler: BaseHTTPRequestHandler, status: int, location: str) -> None:
    """A redirect ``status`` to ``location``."""
    handler.send_response(status)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()
