"""Helpers of the gateway attack suite (tests/gateway/test_attack_gateway*.py, issue 24):
a second agent measuring its latency while an attack runs against the same gateway, an
event stream read in a thread, and the Redis connections a user holds."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import redis

from tests.gateway.gateway_support import GatewayProc

__all__ = ["Bystander", "Stream", "Tally", "user_connections"]

#: The issue's bound: another agent's p99 latency during any attack.
P99_BOUND_S = 0.100


@dataclass
class Tally:
    """``<name>: tries T / refused R / harmed H``, printed like tests/security's."""

    name: str
    tries: int = 0
    refused: int = 0
    harmed: int = 0
    notes: list[str] = field(default_factory=list)

    def count(self, refused: bool, note: str = "") -> None:
        self.tries += 1
        if refused:
            self.refused += 1
        else:
            self.harmed += 1
            self.notes.append(note)

    def line(self) -> str:
        s = f"{self.name}: tries {self.tries} / refused {self.refused} / harmed {self.harmed}"
        print(s)
        return s


class Bystander:
    """Another agent's requests (``GET path`` on its own keep-alive connection, in a
    thread) for as long as the ``with`` block runs, and until ``at_least`` of them were
    timed; ``p99()`` in seconds."""

    def __init__(self, gw: GatewayProc, token: str | None, *, path: str = "/v1/tags",
                 at_least: int = 200, pace_s: float = 0.0,
                 headers: dict[str, str] | None = None) -> None:
        self.gw, self.token, self.path, self.at_least = gw, token, path, at_least
        self.pace_s, self.headers = pace_s, headers or {}
        self.times: list[float] = []
        self.statuses: dict[int, int] = {}
        self._attack_over = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        with httpx.Client(base_url=self.gw.url, headers=auth | self.headers,
                          timeout=30) as c:
            c.get(self.path)  # the pool is open before timing starts
            deadline = time.monotonic() + 120
            while not (self._attack_over.is_set() and len(self.times) >= self.at_least):
                t0 = time.perf_counter()
                r = c.get(self.path)
                self.times.append(time.perf_counter() - t0)
                self.statuses[r.status_code] = self.statuses.get(r.status_code, 0) + 1
                if self.pace_s:
                    time.sleep(self.pace_s)
                if time.monotonic() > deadline:
                    break

    def __enter__(self) -> Bystander:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._attack_over.set()
        self._thread.join(150)

    def p99(self) -> float:
        s = sorted(self.times)
        return s[max(0, int(len(s) * 0.99) - 1)] if s else 0.0

    def check(self, name: str) -> None:
        p99 = self.p99()
        print(f"{name}: bystander p99 {p99 * 1000:.1f} ms over {len(self.times)} requests "
              f"{self.statuses}")
        assert len(self.times) >= self.at_least
        assert p99 < P99_BOUND_S, (name, p99, sorted(self.times)[-5:])


@dataclass
class Stream:
    """``GET /v1/events`` read in a thread: its status, every event, when it ended."""

    gw: GatewayProc
    token: str
    params: dict[str, Any] = field(default_factory=dict)
    status: int = 0
    events: list[tuple[str, str]] = field(default_factory=list)
    ended_at: float | None = None
    opened: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Stream:
        threading.Thread(target=self._run, daemon=True).start()
        assert self.opened.wait(30), "the stream did not open"
        return self

    def _run(self) -> None:
        h = {"Authorization": f"Bearer {self.token}"}
        try:
            with httpx.Client(base_url=self.gw.url, timeout=60) as c, \
                    c.stream("GET", "/v1/events", headers=h, params=self.params) as r:
                self.status = r.status_code
                self.opened.set()
                kind = ""
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        self.events.append((kind, line[6:]))
        except httpx.HTTPError as exc:
            self.events.append(("transport", repr(exc)))
        finally:
            self.ended_at = time.monotonic()
            self.opened.set()

    def wait_end(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.ended_at is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.ended_at is not None

    def error(self) -> dict[str, Any] | None:
        got = [json.loads(d) for k, d in self.events if k == "error"]
        return got[-1] if got else None


def user_connections(gw: GatewayProc, user: str) -> int:
    """Connections Redis holds for ``user`` now (``CLIENT LIST``, admin)."""
    r = redis.Redis.from_url(gw.redis.admin_url)
    try:
        return sum(1 for c in r.client_list() if c.get("user") == user)
    finally:
        r.close()
