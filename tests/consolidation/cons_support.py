"""Support for the consolidation tests: an entry factory and a scripted chat server."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from blackboard.entry import Entry

T0 = 1_700_000_000_000  # a fixed epoch in ms for every crafted batch
MIN = 60_000


def make_entry(
    eid: str,
    value: Any,
    *,
    at: int = 0,
    tags: set[str] | frozenset[str] = frozenset(),
    scope: str = "agent:a1:stm",
    importance: float = 0.5,
    reinforcements: int = 0,
    **metadata: Any,
) -> Entry:
    """An entry created ``at`` minutes after :data:`T0`."""
    return Entry(
        id=eid,
        scope=scope,
        value=value,
        tags=frozenset(tags),
        metadata=metadata,
        importance=importance,
        reinforcements=reinforcements,
        created_at=T0 + at * MIN,
    )


@dataclass
class Reply:
    """One scripted reply: HTTP ``status``, the message ``content`` (for 200), ``usage``
    tokens, an optional ``delay`` in seconds before answering, extra ``headers``, the
    choice's ``finish_reason`` (``length``: cut at ``max_tokens``)."""

    status: int = 200
    content: str = "{}"
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"


class ChatServer:
    """A real HTTP server on 127.0.0.1 speaking ``POST /v1/chat/completions``.

    Replies are taken from ``script`` in order (the last one repeats); every request body
    is kept in ``requests`` with its arrival time in ``times``.
    """

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.times.append(time.monotonic())
                i = len(server.requests) - 1
                reply = server.script[min(i, len(server.script) - 1)]
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, content="not found")
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status == 200:
                    payload = {
                        "id": f"c{i}",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply.content},
                                "finish_reason": reply.finish_reason,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": reply.usage[0],
                            "completion_tokens": reply.usage[1],
                            "total_tokens": sum(reply.usage),
                        },
                    }
                    data = json.dumps(payload).encode()
                else:
                    data = json.dumps({"error": {"message": reply.content}}).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
