"""Cross-agent attempts through REST: refused (403/404), counted in /metrics, and where the
gateway's own check is bypassed (a token that lies about its teams) refused by Redis."""

from __future__ import annotations

import re
from dataclasses import replace

from gateway.tokens import encode_token, parse_token


def denied(gateway, by_redis: str) -> float:
    total = 0.0
    for m in re.finditer(r'^gateway_access_denied_total\{by_redis="(\w+)",route="[^"]+"\} (\S+)$',
                         gateway.metrics(), re.M):
        if m.group(1) == by_redis:
            total += float(m.group(2))
    return total


def seed(gateway):
    """bob (team t2) stores one private and one team entry; returns (alice token, ids)."""
    bob = gateway.token("bob", ["t2"])
    with gateway.client(bob) as c:
        own = c.post("/v1/memories", json={"value": "bob's secret plan"}).json()
        team = c.post("/v1/memories", json={"value": "t2 roadmap", "team": "t2"}).json()
    return gateway.token("alice", ["t1"]), own, team


def test_another_agents_entry_is_refused(gateway):
    alice, own, team = seed(gateway)
    before = denied(gateway, "no")
    with gateway.client(alice) as c:
        for e in (own, team):
            r = c.get(f"/v1/memories/{e['id']}", params={"scope": e["scope"]})
            assert r.status_code == 403 and r.json()["error"] == "AccessDenied", r.text
            # without a scope only alice's own scopes are searched: not found
            assert c.get(f"/v1/memories/{e['id']}").status_code == 404
            r = c.delete(f"/v1/memories/{e['id']}", params={"scope": e["scope"]})
            assert r.status_code == 403
            assert c.delete(f"/v1/memories/{e['id']}").status_code == 404
            r = c.patch(f"/v1/memories/{e['id']}", json={"scope": e["scope"], "value": "x"})
            assert r.status_code == 403
            r = c.post("/v1/recall", json={"query": "plan roadmap", "scopes": [e["scope"]]})
            assert r.status_code == 403
        hits = c.post("/v1/recall", json={"query": "secret plan roadmap"}).json()["hits"]
        assert hits == []
        r = c.post("/v1/memories", json={"value": "x", "team": "t2"})
        assert r.status_code == 403
        r = c.get("/v1/tags", params={"team": "t2", "level": "working"})
        assert r.status_code == 403
        for scope in ("agent:bob:working", "team:t2:*", "agent:bob:*"):
            r = c.get("/v1/events", params={"scope": scope}, timeout=20)
            assert r.status_code == 403, (scope, r.text)
    assert denied(gateway, "no") >= before + 13
    with gateway.client(gateway.token("bob", ["t2"])) as c:  # nothing was changed
        assert c.get(f"/v1/memories/{own['id']}").json()["value"] == "bob's secret plan"


def test_a_token_lying_about_its_teams_is_refused_by_redis(gateway):
    """alice's token edited to claim team t2: the gateway's check passes, Redis (alice's
    ACL user) refuses with NOPERM, answered 403 and counted as a Redis refusal."""
    alice, _, team = seed(gateway)
    forged = encode_token(replace(parse_token(alice), teams=("t1", "t2")))
    before = denied(gateway, "yes")
    with gateway.client(forged) as c:
        # a real login (the password is alice's): her own scopes answer
        assert c.post("/v1/memories", json={"value": "mine"}).status_code == 201
        r = c.get(f"/v1/memories/{team['id']}", params={"scope": "team:t2:working"})
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
        r = c.post("/v1/memories", json={"value": "planted", "team": "t2"})
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
        r = c.delete(f"/v1/memories/{team['id']}", params={"scope": "team:t2:working"})
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
        r = c.get("/v1/events", params={"scope": "team:t2:working"}, timeout=20)
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
        r = c.get("/v1/tags", params={"team": "t2", "level": "working"})
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
    assert denied(gateway, "yes") >= before + 5
    with gateway.client(gateway.token("bob", ["t2"])) as c:
        assert c.get("/v1/tags", params={"team": "t2", "level": "working"}).json() == {
            "tags": {}}
        assert c.get(f"/v1/memories/{team['id']}",
                     params={"scope": "team:t2:working"}).status_code == 200


def test_a_token_claiming_another_agent_acts_as_its_own_user(gateway):
    alice, own, _ = seed(gateway)
    claims = parse_token(alice)
    # The agent comes from the Redis user, not from the token's claim.
    as_bob = encode_token(replace(claims, agent="bob"))
    with gateway.client(as_bob) as c:
        assert c.get("/v1/map").json()["agent"] == "alice"
        assert c.get(f"/v1/memories/{own['id']}").status_code == 404
    # bob's user with alice's password: Redis refuses the login
    stolen_user = encode_token(replace(claims, user="bb-agent-bob", agent="bob"))
    with gateway.client(stolen_user) as c:
        r = c.get(f"/v1/memories/{own['id']}")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
    # the service user with alice's password: refused too (no operator by claim)
    as_operator = encode_token(replace(claims, user="bb-service", operator=True))
    with gateway.client(as_operator) as c:
        assert c.get("/v1/map").status_code == 401


def test_missing_or_malformed_tokens(gateway):
    with gateway.client() as c:
        r = c.get("/v1/map")
        assert r.status_code == 401 and "bearer token" in r.json()["detail"]
    for bad in ("nope", "bbt_", "bbt_x_!!!", "bbt_x_e30", "Basic abc"):
        with gateway.client(bad) as c:
            r = c.get("/v1/tags")
            assert r.status_code == 401, (bad, r.text)
            assert set(r.json()) == {"error", "detail", "field"}


def test_forged_scope_ids_are_refused(gateway):
    alice, own, _ = seed(gateway)
    with gateway.client(alice) as c:
        for scope in ("agent:bob:working", "agent:alice:../bob", "collective:*",
                      "agent:alice:working}", "team:t2"):
            r = c.get(f"/v1/memories/{own['id']}", params={"scope": scope})
            assert r.status_code in (403, 404, 422), (scope, r.text)
            assert r.status_code != 200
        r = c.post("/v1/memories", json={"value": "x", "team": "t1:working:x"})
        assert (r.status_code == 422 and r.json()["field"] is not None) or r.status_code == 403
        r = c.post("/v1/recall", json={"query": "x", "levels": ["agent:bob:working"]})
        assert r.status_code == 422 and "level" in r.json()["detail"]
