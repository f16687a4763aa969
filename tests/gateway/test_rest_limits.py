"""Bad input gets a clear answer: 413 over the body limit, 422 naming the field, 429 from
the per-token bucket shared by gateway processes, 404; never a traceback."""

from __future__ import annotations

import httpx


def test_body_limit_413(gateway, start_gateway):
    tok = gateway.token("alice")
    with gateway.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "x" * 1_100_000})
        assert r.status_code == 413 and r.json()["error"] == "body_too_large"
        assert "1000000" in r.json()["detail"]

        def chunks():  # no Content-Length: refused while streaming
            for _ in range(30):
                yield b"x" * 50_000

        r = c.post("/v1/memories", content=chunks(),
                   headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert c.get("/v1/stats").json()["scopes"].get("agent:alice:working", {}).get(
            "count", 0) == 0
    small = start_gateway(body_limit=2000)
    with small.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "y" * 3000})
        assert r.status_code == 413 and "2000" in r.json()["detail"]
        assert c.post("/v1/memories", json={"value": "y" * 100}).status_code == 201


def test_entry_too_large_is_413_and_writes_nothing(gateway, start_gateway):
    gw = start_gateway(env_extra={"BLACKBOARD_MAX_ENTRY_BYTES": "1000"})
    tok = gateway.token("alice")
    with gw.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "x" * 2000, "tags": ["big"]})
        assert r.status_code == 413, r.text
        assert r.json()["error"] == "EntryTooLarge" and r.json()["field"] == "value"
        r = c.post("/v1/memories/batch", json={"items": [
            {"value": "small", "tags": ["big"]}, {"value": "x" * 2000, "tags": ["big"]}]})
        assert r.status_code == 413
        assert c.get("/v1/tags").json() == {"tags": {}}
        assert c.post("/v1/memories", json={"value": "x" * 500}).status_code == 201


def test_validation_names_the_field(gateway):
    tok = gateway.token("alice")
    cases = [
        ({"value": "x", "importance": 2}, "importance"),
        ({"value": "x", "level": "nope"}, "level"),
        ({"value": "x", "ttl": -1}, "ttl"),
        ({"value": "x", "ttl_s": -1}, "ttl"),  # the old name: the error names the new one
        ({"value": "x", "tags": "notalist"}, "tags"),
        ({"value": "x", "colour": "red"}, "colour"),
        ({}, "value"),
        ({"value": None}, "value"),
        ({"value": "x", "tags": ["bad tag{"]}, "tags"),
        ({"value": "x", "key": "k" * 2000}, "key"),
    ]
    with gateway.client(tok) as c:
        for body, field in cases:
            r = c.post("/v1/memories", json=body)
            assert r.status_code == 422, (body, r.text)
            assert r.json()["field"] == field, (body, r.json())
            assert "Traceback" not in r.text
        r = c.post("/v1/recall", json={"query": "x", "max_results": 0})
        assert r.status_code == 422 and r.json()["field"] == "max_results"
        r = c.post("/v1/recall", json={"tag_filter": {"all_of": ["a"], "none_of": ["a"]}})
        assert r.status_code == 422 and "contradictory" in r.json()["detail"]
        r = c.post("/v1/recall", json={"query": "x", "lens": "no-such-lens"})
        assert r.status_code == 422
        r = c.post("/v1/memories/batch", json={"items": []})
        assert r.status_code == 422 and r.json()["field"] == "items"
        r = c.post("/v1/memories", content=b"{not json", headers={
            "content-type": "application/json"})
        assert r.status_code == 422
        r = c.get("/v1/facts", params={"limit": 0})
        assert r.status_code == 422 and r.json()["field"] == "limit"
        # a name parameter follows the library's name rule, reserved segments included
        for bad in ("e", "tag", "a b", "n" * 65):
            r = c.get("/v1/tags", params={"team": bad})
            assert r.status_code == 422 and r.json()["field"] == "team", (bad, r.text)
            r = c.get("/v1/dashboard/timeline", params={"agent": bad})
            assert r.status_code == 422 and r.json()["field"] == "agent", (bad, r.text)
        assert "reserved" in c.get("/v1/tags", params={"team": "e"}).json()["detail"]
        # a batch with one bad item writes nothing
        r = c.post("/v1/memories/batch", json={"items": [
            {"value": "ok"}, {"value": "x", "tags": ["bad tag{"]}]})
        assert r.status_code == 422 and r.json()["field"] == "tags"
        r = c.post("/v1/memories/batch", json={"items": [
            {"value": "ok"}, {"value": "x", "team": "not-mine"}]})
        assert r.status_code == 403
        assert c.get("/v1/tags").json() == {"tags": {}}
        assert "agent:alice:working" not in c.get("/v1/stats").json()["scopes"] or c.get(
            "/v1/stats").json()["scopes"]["agent:alice:working"]["count"] == 0


def test_rate_limit_shared_by_two_processes(gateway, start_gateway):
    """burst 3 at 0.5/s: the 4th request within a second is refused, whichever process
    it reaches, with Retry-After; another token has its own bucket."""
    one = start_gateway(rate=0.5, burst=3)
    two = start_gateway(rate=0.5, burst=3)
    tok, other = gateway.token("alice"), gateway.token("bob")
    codes = []
    for gw in (one, two, one, two):
        with gw.client(tok) as c:
            codes.append(c.get("/v1/tags"))
    assert [r.status_code for r in codes] == [200, 200, 200, 429]
    r = codes[-1]
    assert r.json()["error"] == "rate_limited" and int(r.headers["retry-after"]) >= 1
    with one.client(other) as c:
        assert c.get("/v1/tags").status_code == 200
    # an unauthenticated request costs no bucket and is told 401, not 429
    assert httpx.get(one.url + "/v1/tags").status_code == 401
    assert 'status="429"' in one.metrics() or 'status="429"' in two.metrics()


def test_leasing_processes_pass_no_more_than_the_bucket(gateway, start_gateway):
    """Burst 60 at 0.01/s: each process leases 3 tokens per round trip to the bucket and
    spends them without asking, yet the two together pass exactly 60 requests, then 429s
    with Retry-After on both."""
    one = start_gateway(rate=0.01, burst=60)
    two = start_gateway(rate=0.01, burst=60)
    tok = gateway.token("alice")
    with one.client(tok) as a, two.client(tok) as b:
        codes = [c.get("/v1/tags").status_code for _ in range(40) for c in (a, b)]
        assert codes.count(200) == 60 and codes[-4:] == [429] * 4
        r = b.get("/v1/tags")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1


def test_recalls_are_charged_even_when_malformed(gateway, start_gateway):
    """Burst 4 at 0.5/s: 4 recalls, then 429s; a malformed body costs its token too (the
    bucket is asked before the body is validated), so a flood of bad bodies is limited
    like any other."""
    gw = start_gateway(rate=0.5, burst=4)
    alice, bob = gateway.token("alice"), gateway.token("bob")
    with gw.client(alice) as c:
        codes = [c.post("/v1/recall", json={"query": "acme"}).status_code for _ in range(6)]
        assert codes == [200, 200, 200, 200, 429, 429]
        r = c.post("/v1/recall", json={"query": "acme", "max_results": 0})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    with gw.client(bob) as c:
        assert c.post("/v1/recall", json={"query": "acme"}).status_code == 200
        bad = [c.post("/v1/recall", json={"query": "x", "max_results": 0}).status_code
               for _ in range(3)]
        assert bad == [422, 422, 422]  # the body's error, each charged
        assert c.post("/v1/recall", json={"query": "acme"}).status_code == 429
