"""``POST /v1/context`` through a real gateway process (issue 27 item 3): the context an
agent gets over REST (and MCP) is the library's, and bad input is a 422 naming the field."""

from __future__ import annotations

import pytest


def test_context_over_rest_cites_the_entry_that_answers(gateway):
    tok = gateway.token("carol", [])
    with gateway.client(tok) as c:
        for v in ("Acme Corp pays its invoices on net-30 terms.",
                  "The billing deploy failed at the migration."):
            assert c.post("/v1/memories", json={"value": v, "level": "stm"}).status_code == 201
        r = c.post("/v1/context", json={"query": "Acme payment terms", "budget_tokens": 80})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["tokens"] <= 80 and body["budget_tokens"] == 80
        assert body["citations"]["m1"]["value"].startswith("Acme Corp pays")
        assert "[m1]" in body["text"] and "net-30" in body["text"]


@pytest.mark.parametrize(("body", "field"), [
    ({"query": "x", "budget_tokens": 0}, "budget_tokens"),
    ({"query": "x", "budget_tokens": 10**9}, "budget_tokens"),
    ({"query": "", "budget_tokens": 100}, "query"),
    ({"query": "x", "levels": ["nowhere"]}, "levels"),
    ({"query": "x", "budgets": 5}, "budgets"),
])
def test_bad_input_is_a_422_naming_the_field(gateway, body, field):
    with gateway.client(gateway.token("carol", [])) as c:
        r = c.post("/v1/context", json=body)
        assert r.status_code == 422, r.text
        assert field in (r.json().get("field") or ""), r.json()


async def test_context_over_mcp_is_the_same_within_its_budget(gateway):
    from tests.gateway.test_mcp import mcp_client, ok

    tok = gateway.token("dave", [])
    with gateway.client(tok) as c:
        assert c.post("/v1/memories", json={"value": "Globex prefers email invoices.",
                                            "level": "stm"}).status_code == 201
    async with mcp_client(gateway, tok) as m:
        got = ok(await m.call_tool("context", {"query": "how does Globex want invoices",
                                               "budget_tokens": 50}))
        bad = await m.call_tool("context", {"query": "x", "budget_tokens": 0})
    assert got["tokens"] <= 50 and "[m1]" in got["text"] and "email" in got["text"]
    assert got["citations"]["m1"]["scope"] == "agent:dave:stm"
    assert bad.is_error


async def test_remote_memory_context_is_the_gateway_s(gateway):
    from memory.remote import RemoteMemory

    tok = gateway.token("erin", [])
    async with RemoteMemory(gateway.url, tok) as r:
        await r.store("Initech has a dedicated billing portal.", "stm")
        c = await r.context("where does Initech bill", budget_tokens=40)
    assert c.tokens <= 40 and c.citations["m1"].value.startswith("Initech")
