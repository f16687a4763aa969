"""REST shows who wrote an entry (``author``, established by the write script from the
token's Redis user) apart from the writers its data claims (``claimed_agents``)."""

from __future__ import annotations


def test_author_is_the_token_user_and_named_writers_are_claims(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "x", "level": "stm",
                                         "metadata": {"agent": "bob"}, "tags": ["agent:carol"]})
        assert r.status_code == 201, r.text
        e = r.json()
        assert e["author"] == "alice" and e["claimed_agents"] == ["bob", "carol"]
        assert e["metadata"] == {"agent": "bob"}  # kept as written
        got = c.get(f"/v1/memories/{e['id']}").json()
        assert got["author"] == "alice" and got["claimed_agents"] == ["bob", "carol"]
        r = c.post("/v1/memories/batch", json={"items": [
            {"value": "in the team", "team": "t1", "metadata": {"agent": "bob"}},
            {"value": "own", "level": "stm"}]})
        assert r.status_code == 201, r.text
        assert [(x["scope"], x["author"], x["claimed_agents"]) for x in r.json()["entries"]] == [
            ("team:t1:working", "alice", ["bob"]), ("agent:alice:stm", "alice", [])]
        r = c.post("/v1/memories", json={"value": "plain", "team": "t1"})
        assert r.json()["author"] == "alice" and r.json()["claimed_agents"] == []
