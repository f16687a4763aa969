"""``POST /v1/feedback`` and the MCP ``feedback`` tool through a real gateway process on
the secure Redis (issue 27 item 4): counts per agent, bad input a 422/404 naming
``entry_ids`` or ``helpful``, a token lying about its teams refused by Redis."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.tokens import encode_token, parse_token


def test_feedback_over_rest_counts_each_agent_once(gateway):
    alice, bob = gateway.token("fa", ["ft"]), gateway.token("fb", ["ft"])
    with gateway.client(alice) as c:
        e = c.post("/v1/memories", json={"value": "the deploy key is in the vault",
                                         "team": "ft"}).json()
        for _ in range(2):
            r = c.post("/v1/feedback", json={"entry_ids": [e["id"]], "helpful": True})
            assert r.status_code == 200, r.text
        v = r.json()["entries"][0]
        assert (v["scope"], v["uses"], v["helpful"]) == ("team:ft:working", 1, 1)
        assert v["changed"] is False
        assert r.json()["evidence"] == []
    with gateway.client(bob) as c:
        v = c.post("/v1/feedback", json={"entry_ids": [e["id"]], "helpful": False}).json()
        assert (v["entries"][0]["uses"], v["entries"][0]["helpful"]) == (2, 1)
        got = c.get(f"/v1/memories/{e['id']}").json()
        assert (got["uses"], got["helpful"], got["reinforcements"]) == (2, 1, 1)


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"entry_ids": [], "helpful": True}, 422, "entry_ids"),
    ({"entry_ids": ["../x"], "helpful": True}, 422, "entry_ids"),
    ({"entry_ids": ["0" * 26], "helpful": "yes"}, 422, "helpful"),
    ({"entry_ids": ["0" * 26], "helpful": 1}, 422, "helpful"),
    ({"entry_ids": ["0" * 26]}, 422, "helpful"),
    ({"entry_ids": ["0" * 26], "helpful": True}, 404, "entry_ids"),
])
def test_bad_feedback_names_the_field(gateway, body, status, field):
    with gateway.client(gateway.token("fc", [])) as c:
        r = c.post("/v1/feedback", json=body)
        assert r.status_code == status, r.text
        assert field in (r.json().get("field") or ""), r.json()
        assert "Traceback" not in r.text


def test_foreign_entries_are_refused_and_nothing_is_written(gateway):
    with gateway.client(gateway.token("fd", ["fz"])) as c:
        own = c.post("/v1/memories", json={"value": "fd's private note"}).json()
        team = c.post("/v1/memories", json={"value": "fz's plan", "team": "fz"}).json()
    alice = gateway.token("fe", ["fy"])
    forged = encode_token(replace(parse_token(alice), teams=("fy", "fz")))
    # first use of fe's credential (the gateway keys its callers by credential, so the
    # forged claims stay): the gateway's check passes the claimed team, Redis refuses
    with gateway.client(forged) as c:
        mine = c.post("/v1/memories", json={"value": "fe's note"}).json()
        r = c.post("/v1/feedback", json={"entry_ids": [mine["id"], team["id"]],
                                         "helpful": True})
        assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
    with gateway.client(gateway.token("fg", [])) as c:  # another agent's id: not told
        ours = c.post("/v1/memories", json={"value": "fg's note"}).json()
        r = c.post("/v1/feedback", json={"entry_ids": [ours["id"], own["id"]],
                                         "helpful": True})
        assert c.get(f"/v1/memories/{ours['id']}").json()["uses"] == 0
        assert r.status_code == 404 and r.json()["field"] == "entry_ids", r.text
    with gateway.client(gateway.token("fd", ["fz"])) as c:
        for e in (own, team):
            assert c.get(f"/v1/memories/{e['id']}").json()["uses"] == 0
    with gateway.client(alice) as c:
        got = c.get(f"/v1/memories/{mine['id']}", params={"scope": mine["scope"]})
        assert got.json()["uses"] == 0, got.text  # nothing written, the own entry neither


async def test_feedback_over_mcp_and_remote_memory(gateway):
    from memory.remote import RemoteMemory
    from tests.gateway.test_mcp import mcp_client, ok, refused

    tok = gateway.token("ff", [])
    async with RemoteMemory(gateway.url, tok) as r:
        e = await r.store("the invoice run starts at 02:00", "stm")
        got = await r.feedback([e.id], helpful=True)
        assert got.verdicts[0].uses == 1 and got.verdicts[0].reinforced
    async with mcp_client(gateway, tok) as m:
        out = ok(await m.call_tool("feedback", {"ids": [e.id], "helpful": False}))
        bad = refused(await m.call_tool("feedback", {"ids": [], "helpful": True}))
        hits = ok(await m.call_tool("recall", {"query": "invoice run", "goal": "night",
                                               "lens": "useful"}))
    assert out == {"memories": [{"id": e.id, "uses": 1, "helpful": 0}], "contradicted": []}
    assert "ids" in bad
    assert hits["memories"][0]["id"] == e.id


def test_recall_takes_the_useful_lens_and_a_goal(gateway):
    with gateway.client(gateway.token("fh", [])) as c:
        e = c.post("/v1/memories", json={"value": "the invoice run starts at 02:00"}).json()
        r = c.post("/v1/recall", json={"query": "invoice run", "lens": "useful",
                                       "context": {"goal": "billing", "weight": 0.5}})
        assert r.status_code == 200, r.text
        assert r.json()["hits"][0]["entry"]["id"] == e["id"]
        for body, field in (({"query": "x", "context": {"goal": " "}}, "context.goal"),
                            ({"query": "x", "utility": 2}, "utility"),
                            ({"query": "x", "context": {"goal": "g", "weight": "1"}},
                             "context.weight")):
            r = c.post("/v1/recall", json=body)
            assert r.status_code == 422 and field in (r.json()["field"] or ""), r.text
