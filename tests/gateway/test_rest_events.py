"""SSE ``/v1/events``: the caller's scopes' feed events, resumable with Last-Event-ID."""

from __future__ import annotations

import json
import threading
import time

import httpx


def read_events(gateway, token: str, n: int, *, headers: dict[str, str] | None = None,
                params: dict | None = None, write: list[str] | None = None) -> list[dict]:
    """Open the stream, then (once it is open) store ``write``; return ``n`` events."""
    out: list[dict] = []
    h = {"Authorization": f"Bearer {token}", **(headers or {})}
    with httpx.Client(base_url=gateway.url, timeout=30) as c, \
            c.stream("GET", "/v1/events", headers=h, params=params or {}) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = r.iter_lines()
        assert next(lines).startswith(": stream of ")
        if write:
            threading.Thread(target=_store, args=(gateway, token, write)).start()
        cur: dict = {}
        deadline = time.monotonic() + 30
        for line in lines:
            if line.startswith("id: "):
                cur["cursor"] = line[4:]
            elif line.startswith("event: "):
                cur["event"] = line[7:]
            elif line.startswith("data: "):
                cur["data"] = json.loads(line[6:])
            elif line == "" and cur:
                out.append(cur)
                cur = {}
                if len(out) >= n:
                    break
            assert time.monotonic() < deadline
    return out


def _store(gateway, token: str, values: list[str]) -> None:
    time.sleep(0.2)
    with gateway.client(token) as c:
        for v in values:
            c.post("/v1/memories", json={"value": v, "tags": ["t"]}).raise_for_status()


def test_live_events_then_resume_after_last_event_id(gateway):
    tok = gateway.token("alice")
    got = read_events(gateway, tok, 2, write=["one", "two"],
                      params={"scope": "agent:alice:*"})
    assert [e["event"] for e in got] == ["written", "written"]
    assert got[0]["cursor"] == f"agent:alice:working@{got[0]['data']['id']}"
    assert got[0]["data"]["tags"] == ["t"]
    # written while nobody listened
    with gateway.client(tok) as c:
        third = c.post("/v1/memories", json={"value": "three"}).json()
        c.delete(f"/v1/memories/{third['id']}").raise_for_status()
    resumed = read_events(gateway, tok, 2, headers={"Last-Event-ID": got[1]["cursor"]})
    assert [(e["event"], e["data"]["entry_id"]) for e in resumed] == [
        ("written", third["id"]), ("deleted", third["id"])]
    # ?since= does the same for clients that cannot set the header
    again = read_events(gateway, tok, 1, params={"since": got[1]["cursor"]})
    assert again[0]["data"]["entry_id"] == third["id"]


def test_filters_and_bad_cursor(gateway):
    tok = gateway.token("alice")
    with gateway.client(tok) as c:
        e = c.post("/v1/memories", json={"value": "a", "tags": ["keep"]}).json()
        c.post("/v1/memories", json={"value": "b", "tags": ["drop"]}).raise_for_status()
        c.delete(f"/v1/memories/{e['id']}").raise_for_status()
        r = c.get("/v1/events", params={"since": "nonsense"})
        assert r.status_code == 422 and "Last-Event-ID" in r.json()["detail"]
    got = read_events(gateway, tok, 1, params={"since": "0", "tag": "keep",
                                               "types": "deleted"})
    assert got[0]["event"] == "deleted" and got[0]["data"]["entry_id"] == e["id"]
