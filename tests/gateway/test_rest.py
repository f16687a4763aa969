"""Every REST route through a real gateway process, as an agent's token."""

from __future__ import annotations

import asyncio
import time

from memory import AgentMemory
from memory.response_bodies import EntryOut, Hit, RecallResponse
from tests.gateway.gateway_support import run_async


def test_store_get_recall_forget(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        r = c.post("/v1/memories", json={"value": "the deploy key rotates on fridays",
                                          "tags": ["ops"], "metadata": {"src": "chat"},
                                          "importance": 0.9})
        assert r.status_code == 201, r.text
        e = EntryOut.model_validate(r.json())
        assert e.scope == "agent:alice:working" and e.tags == ["ops"]
        assert e.metadata == {"src": "chat"} and e.importance == 0.9
        got = c.get(f"/v1/memories/{e.id}")
        assert got.status_code == 200 and got.json() == r.json()
        by_scope = c.get(f"/v1/memories/{e.id}", params={"scope": e.scope})
        assert by_scope.json()["id"] == e.id
        res = RecallResponse.model_validate(
            c.post("/v1/recall", json={"query": "deploy key", "explain": True}).json())
        assert res.hits[0].entry.id == e.id
        assert res.scopes and "agent:alice:working" in res.scopes
        assert set(res.hits[0].components.model_dump()) == {
            "dense", "bm25", "fused", "strength", "recency", "importance"}
        assert res.hits[0].components.bm25 and res.hits[0].components.bm25 > 0
        assert c.delete(f"/v1/memories/{e.id}").status_code == 204
        miss = c.get(f"/v1/memories/{e.id}")
        assert miss.status_code == 404 and miss.json()["error"] == "NotFound"
        assert c.delete(f"/v1/memories/{e.id}").status_code == 404


def test_recall_matches_the_library(gateway):
    """The same query through REST and through AgentMemory gives the same hits and scores."""
    tok = gateway.token("alice")
    with gateway.client(tok) as c:
        for i, text in enumerate(["redis streams hold events", "cats sleep all day",
                                  "streams of events feed the workers"]):
            c.post("/v1/memories", json={"value": text, "tags": [f"n{i}"],
                                         "level": "semantic"}).raise_for_status()
        q = {"query": "event streams", "levels": ["semantic"], "max_results": 5,
             "tag_filter": {"none_of": ["n1"]}}
        rest = RecallResponse.model_validate(c.post("/v1/recall", json=q).json())

    async def lib() -> list:
        async with gateway.admin() as bb, AgentMemory(bb, "alice") as mem:
            from memory import MemoryQuery

            return await mem.recall(MemoryQuery(**q))

    local = run_async(lib)
    assert [h.entry.id for h in rest.hits] == [h.entry.id for h in local]
    assert len(rest.hits) == 2
    for h, s in zip(rest.hits, local, strict=True):
        back = Hit.model_validate(h.model_dump()).to_scored()
        assert back.entry.id == s.entry.id and abs(back.fused - s.fused) < 1e-6


def test_batch_update_tags_and_team(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        r = c.post("/v1/memories/batch", json={"items": [
            {"value": "one", "tags": ["a"]},
            {"value": {"text": "two", "n": 2}, "tags": ["a", "b"], "level": "episodic"},
            {"value": "team note", "team": "t1", "tags": ["a"]},
        ]})
        assert r.status_code == 201, r.text
        ents = r.json()["entries"]
        assert [e["scope"] for e in ents] == [
            "agent:alice:working", "agent:alice:ltm:episodic", "team:t1:working"]
        first = ents[0]
        up = c.patch(f"/v1/memories/{first['id']}",
                     json={"value": "one, edited", "tags": ["a", "edited"],
                           "expected_version": first["version"]})
        assert up.status_code == 200, up.text
        assert up.json()["value"] == "one, edited" and up.json()["version"] == 2
        stale = c.patch(f"/v1/memories/{first['id']}",
                        json={"value": "lost", "expected_version": first["version"]})
        assert stale.status_code == 409 and stale.json()["error"] == "VersionConflict"
        assert c.get(f"/v1/memories/{first['id']}").json()["value"] == "one, edited"
        assert c.get("/v1/tags").json() == {"tags": {"a": 2, "b": 1, "edited": 1}}
        assert c.get("/v1/tags", params={"level": "working"}).json()["tags"] == {
            "a": 1, "edited": 1}
        assert c.get("/v1/tags", params={"team": "t1", "level": "working"}).json() == {
            "tags": {"a": 1}}
        # the team entry is found, updated and forgotten by its scope
        team_e = ents[2]
        assert c.delete(f"/v1/memories/{team_e['id']}",
                        params={"scope": "team:t1:working"}).status_code == 204


def test_map_stats_facts_procedures_messages(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        c.post("/v1/memories", json={"value": {"statement": "water boils at 100C"},
                                     "level": "semantic", "tags": ["fact"],
                                     "metadata": {"evidence": ["e1"]}}).raise_for_status()
        c.post("/v1/memories", json={"value": {"title": "deploy", "steps": ["a", "b"]},
                                     "level": "procedural"}).raise_for_status()
        m = c.get("/v1/map").json()
        assert m["agent"] == "alice" and m["teams"] == ["t1"]
        scopes = {s["scope"]: s for s in m["scopes"]}
        assert scopes["agent:alice:ltm:semantic"]["count"] == 1
        assert not any(s.startswith("agent:bob") for s in scopes)
        st = c.get("/v1/stats").json()["scopes"]
        assert st["agent:alice:ltm:procedural"]["count"] == 1
        pool = st["agent:alice:ltm:procedural"]  # issue 27 item 5: pool statistics
        assert pool["agents"] == {"alice": 1} and pool["avg_strength"] == 1.0
        assert pool["evicted_total"] == 0 and set(pool["removed"]) == {
            "expired", "decayed", "capacity", "merged"}
        facts = c.get("/v1/facts").json()["entries"]
        assert [f["value"]["statement"] for f in facts] == ["water boils at 100C"]
        assert facts[0]["metadata"] == {"evidence": ["e1"]}
        procs = c.get("/v1/procedures").json()["entries"]
        assert procs[0]["value"]["steps"] == ["a", "b"]
        r = c.post("/v1/sessions/s1/messages", json={"messages": [
            {"speaker": "user", "text": "hello there"},
            {"speaker": "bot", "text": "hi", "at": "2026-01-02T03:04:05Z",
             "metadata": {"k": 1}}]})
        assert r.status_code == 201, r.text
        ents = r.json()["entries"]
        assert [e["value"]["position"] for e in ents] == [0, 1]
        assert ents[1]["metadata"] == {"k": 1}
        assert all(e["scope"] == "agent:alice:ltm:episodic" for e in ents)
        more = c.post("/v1/sessions/s1/messages",
                      json={"messages": [{"speaker": "user", "text": "again"}]}).json()
        assert more["entries"][0]["value"]["position"] == 2


def test_operator_sees_every_scope(gateway):
    a, b = gateway.token("alice"), gateway.token("bob", ["t2"])
    for tok, text in ((a, "alice's"), (b, "bob's")):
        with gateway.client(tok) as c:
            c.post("/v1/memories", json={"value": text}).raise_for_status()
    with gateway.client(gateway.operator_token()) as c:
        m = c.get("/v1/map").json()
        names = {s["scope"] for s in m["scopes"]}
        assert m["agent"] == "*"
        assert {"agent:alice:working", "agent:bob:working", "team:t2:working"} <= names
        st = c.get("/v1/stats").json()["scopes"]
        assert st["agent:alice:working"]["count"] == 1 == st["agent:bob:working"]["count"]
        assert st["agent:bob:working"]["agents"] == {"bob": 1}
    with gateway.client(a) as c:
        assert not any("bob" in s["scope"] for s in c.get("/v1/map").json()["scopes"])
        assert "agent:bob:working" not in c.get("/v1/stats").json()["scopes"]


def test_health_ready_metrics_docs(gateway):
    with gateway.client() as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        gateway.token("alice")  # loads the scripts after the reset
        assert c.get("/readyz").status_code == 200
        spec = c.get("/openapi.json").json()
        for p in ("/v1/memories", "/v1/memories/batch", "/v1/memories/{entry_id}",
                  "/v1/recall", "/v1/tags", "/v1/map", "/v1/stats", "/v1/facts",
                  "/v1/procedures", "/v1/sessions/{session}/messages", "/v1/events"):
            assert p in spec["paths"], p
        assert "StoreRequest" in spec["components"]["schemas"]
        assert c.get("/docs").status_code == 200
        text = c.get("/metrics").text
        assert 'gateway_requests_total{method="GET",route="/healthz",status="200"}' in text
        assert "gateway_request_seconds_bucket" in text
        assert "gateway_recall_embeddings_pending 0.0" in text  # no recall index yet


def test_metrics_show_the_recall_index_catching_up(gateway):
    # The token's recall index embeds new entries in the background: /metrics shows what
    # still waits for a vector, and it drains to 0.
    tok = gateway.token("alice")
    with gateway.client(tok) as c:
        assert c.post("/v1/recall", json={"query": "warm"}).status_code == 200
        items = [{"value": f"note {i} about the quarterly budget", "level": "working"}
                 for i in range(100)]
        assert c.post("/v1/memories/batch", json={"items": items}).status_code == 201
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = next(x for x in c.get("/metrics").text.splitlines()
                        if x.startswith("gateway_recall_embeddings_pending "))
            seen.append(float(line.split()[1]))
            if seen[-1] == 0 and len(seen) > 1:
                break
            time.sleep(0.05)
        assert seen[-1] == 0, seen
        got = c.post("/v1/recall", json={"query": "budget", "max_results": 100}).json()
        hits = got["hits"]
        assert len(hits) == 100 and all(h["components"]["dense"] is not None for h in hits)
        # issue 31: the response says how complete it was
        assert got["dense_pending"] == 0 and all(h["has_vector"] for h in hits)
        bad = c.post("/v1/recall", json={"query": "budget", "consistency": "eventual"})
        assert bad.status_code == 422 and "consistency" in bad.text
        ok = c.post("/v1/recall", json={"query": "budget", "consistency": "semantic"})
        assert ok.status_code == 200 and ok.json()["dense_pending"] == 0


def test_readyz_loads_what_is_missing(gateway):
    # After the reset the server holds no script: /readyz loads them on the service
    # connection (issue 23) instead of staying 503; a service user that may not load them
    # gets their names (tests/gateway/test_readyz_restart.py).
    with gateway.client() as c:
        r = c.get("/readyz")
        assert r.status_code == 200, r.text


def test_no_traceback_on_unknown_route_or_method(gateway):
    tok = gateway.token("alice")
    with gateway.client(tok) as c:
        r = c.get("/v1/nope")
        assert r.status_code == 404 and set(r.json()) == {"error", "detail", "field"}
        r = c.put("/v1/recall", json={})
        assert r.status_code == 405 and r.json()["error"] == "method_not_allowed"


def test_concurrent_requests_share_one_pool(gateway):
    import httpx

    tok = gateway.token("alice")

    async def many() -> list[int]:
        async with httpx.AsyncClient(base_url=gateway.url,
                                     headers={"Authorization": f"Bearer {tok}"},
                                     timeout=60) as c:
            rs = await asyncio.gather(*(c.post("/v1/memories", json={"value": f"v{i}"})
                                        for i in range(40)))
            return [r.status_code for r in rs]

    assert run_async(many) == [201] * 40
    with gateway.client(tok) as c:
        assert c.get("/v1/stats").json()["scopes"]["agent:alice:working"]["count"] == 40


def test_as_of_and_history_over_rest(gateway):
    """Issue 25: ``as_of`` and ``include_history`` travel in the recall body; an ``as_of``
    in the future or unparsable is a 422 naming the field (recall and the beliefs view),
    and nothing is written."""
    tok = gateway.token("dora", [])
    with gateway.client(tok) as c:
        ok = c.post("/v1/recall", json={"query": "anything", "as_of": "2024-01-01T00:00:00Z",
                                        "include_history": True})
        assert ok.status_code == 200, ok.text
        for bad in ("2999-01-01T00:00:00Z", "last tuesday"):
            r = c.post("/v1/recall", json={"query": "anything", "as_of": bad})
            assert r.status_code == 422 and r.json()["field"] == "as_of", r.text
            v = c.get("/v1/dashboard/beliefs", params={"as_of": bad})
            assert v.status_code == 422 and "as_of" in str(v.json()["field"]), v.text
        assert c.get("/v1/dashboard/beliefs",
                     params={"as_of": "2024-01-01T00:00:00"}).status_code == 200  # naive: UTC
        for bad in ("2024-01-01", "1700000000"):  # what the schema's date-time is not
            r = c.post("/v1/recall", json={"query": "anything", "as_of": bad})
            assert r.status_code == 422 and r.json()["field"] == "as_of", r.text
            v = c.get("/v1/dashboard/beliefs", params={"as_of": bad})
            assert v.status_code == 422 and "as_of" in str(v.json()["field"]), v.text
