"""The REST round trip through a real gateway process: store, get, recall, forget."""

from __future__ import annotations


def test_store_get_recall_forget(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "the deploy key rotates on fridays",
                                          "tags": ["ops"]})
        assert r.status_code == 201, r.text
        e = r.json()
        assert e["scope"] == "agent:alice:working" and e["tags"] == ["ops"]
        got = c.get(f"/v1/memories/{e['id']}")
        assert got.status_code == 200 and got.json()["value"] == e["value"]
        hits = c.post("/v1/recall", json={"query": "deploy key", "explain": True}).json()
        assert hits["hits"][0]["entry"]["id"] == e["id"]
        assert set(hits["hits"][0]["components"]) == {"dense", "bm25", "fused", "strength",
                                                      "recency", "importance"}
        assert c.delete(f"/v1/memories/{e['id']}").status_code == 204
        miss = c.get(f"/v1/memories/{e['id']}")
        assert miss.status_code == 404 and miss.json()["error"] == "NotFound"
