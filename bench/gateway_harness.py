"""What ``bench/gateway.py`` starts and talks to: a ``python -m gateway`` process on a free
port (:class:`Gateway`), a minimal HTTP/1.1 keep-alive client on one of its connections
(:class:`Wire`: the server and the wire, without a client library's cost), and the wait
until the recall indexes have embedded their backlog (:func:`drained`).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from gateway.settings import GatewaySettings

ROOT = Path(__file__).resolve().parents[1]


async def drained(url: str, mem: Any = None, limit_s: float = 600.0) -> float:
    """Seconds until the recall indexes have embedded the entries they wait on: this
    process's (``mem``'s retriever) and the gateway's (its ``/metrics`` gauge read 0 on six
    fresh connections in a row, so every process of a multi-process gateway is asked)."""
    t0 = time.monotonic()
    zeros = 0
    while zeros < 6:
        if time.monotonic() - t0 > limit_s:
            raise RuntimeError(f"recall indexes still embedding after {limit_s:g} s")
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            text = (await http.get("/metrics")).text
        gauge = next((float(x.split()[1]) for x in text.splitlines()
                      if x.startswith("gateway_recall_embeddings_pending ")), 0.0)  # older
        here = mem.retriever.pending_embeddings() if mem is not None and mem.retriever else 0
        zeros = zeros + 1 if gauge == 0 and here == 0 else 0
        await asyncio.sleep(0.1 if zeros else 0.5)
    return time.monotonic() - t0


class Wire:
    """A minimal HTTP/1.1 keep-alive client on one connection (requests with a JSON body,
    responses with a ``Content-Length``): what a request costs the server and the wire,
    without the cost of a client library."""

    def __init__(self, url: str, token: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self.auth = f"Bearer {token}".encode()
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None
        #: The last response's ``Server-Timing: recall;dur=<ms>``, in seconds (None: none).
        self.recall_s: float | None = None

    async def __aenter__(self) -> Wire:
        self._r, self._w = await asyncio.open_connection(self.host, self.port)
        return self

    async def _reopen(self) -> None:
        # The server closes a connection idle past its keep-alive time (uvicorn: 5 s).
        if self._w is not None:
            self._w.close()
        self._r, self._w = await asyncio.open_connection(self.host, self.port)

    async def __aexit__(self, *exc: object) -> None:
        if self._w is not None:
            self._w.close()
            await self._w.wait_closed()

    async def post(self, path: str, body: Any) -> tuple[int, bytes]:
        try:
            return await self._post(path, body)
        except (asyncio.IncompleteReadError, ConnectionError):
            # Closed for idleness while this side waited its turn, before at_eof() could
            # see it (a loaded machine makes the other sides' blocks long): once more.
            await self._reopen()
            return await self._post(path, body)

    async def _post(self, path: str, body: Any) -> tuple[int, bytes]:
        assert self._r is not None and self._w is not None
        if self._r.at_eof():
            await self._reopen()
            assert self._r is not None and self._w is not None
        data = json.dumps(body).encode()
        self._w.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (path.encode(), self.host.encode(), self.auth, len(data), data))
        head = (await self._r.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        length = next(int(h.split(":", 1)[1]) for h in head[1:]
                      if h.lower().startswith("content-length:"))
        self.recall_s = next((float(h.partition("recall;dur=")[2]) / 1e3 for h in head[1:]
                              if h.lower().startswith("server-timing:") and "recall;dur=" in h),
                             None)
        return status, await self._r.readexactly(length)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """``python -m gateway`` with ``workers`` processes on a free port."""

    def __init__(self, redis_url: str, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile("w+b", prefix="gw-bench-", suffix=".log",  # noqa: SIM115
                                               delete=False)
        # The rate limit on, at a rate no caller here reaches, with the default burst (and
        # so the default lease of the bucket's tokens).
        env = {**os.environ, "BLACKBOARD_GATEWAY_REDIS_URL": redis_url,
               "BLACKBOARD_GATEWAY_RATE": "1000000",
               "BLACKBOARD_GATEWAY_BURST": str(GatewaySettings().burst),
               "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "--port", str(self.port),
             "--workers", str(workers)], cwd=ROOT, env=env, stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = Path(self.log.name).read_text()
                self.stop()
                raise RuntimeError(f"gateway exited: {text}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("gateway did not answer /healthz in 90 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
