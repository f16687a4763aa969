"""A local fake of the OpenAI Responses API (``POST /v1/responses``, non-streaming), enough
for ``agents.Runner.run``: a real HTTP server on 127.0.0.1 in a thread that records every
request body and answers from a script of outputs, one per call. The Responses API is a
remote service, so the tests of the Agents SDK integration talk to this instead."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A reply: the request body -> the response's ``output`` items.
Reply = Callable[[dict[str, Any]], list[dict[str, Any]]]


def say(text: str, n: int = 0) -> dict[str, Any]:
    """An assistant message output item."""
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(name: str, arguments: dict[str, Any], n: int = 0) -> dict[str, Any]:
    """A function call output item."""
    return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def _response(n: int, model: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{n}", "object": "response", "created_at": 1_700_000_000 + n,
        "model": model, "status": "completed", "output": output, "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


class FakeResponses:
    """The server's state: the requests seen and the replies still to give."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self._lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path.rstrip("/") != "/v1/responses":
                return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
            self.requests.append(body)
            if not self.replies:
                return 500, {"error": {"message": "the fake has no reply left", "type": "x"}}
            n = len(self.requests)
            return 200, _response(n, str(body.get("model")), self.replies.pop(0)(body))


@contextmanager
def fake_responses(replies: list[Reply]) -> Iterator[FakeResponses]:
    """Serve ``replies`` at ``http://127.0.0.1:<free port>/v1`` until the block ends."""
    fake = FakeResponses(replies)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the name is http.server's hook
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                body = {}
            status, doc = fake.answer(self.path, body)
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
