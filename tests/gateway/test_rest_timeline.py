"""``GET /v1/timeline`` and ``/v1/timeline/expand`` and the MCP tools of the same names
through a real gateway (issue 28 item 1): bad input is a 422 naming the field, another
agent's segment a 403."""

from __future__ import annotations

from typing import Any

from tests.gateway.gateway_support import GatewayProc, run_async


def _segments(node: dict[str, Any]) -> list[str]:
    if node["level"] == "segment":
        return [node["ref"]]
    return [r for c in node.get("nodes", []) for r in _segments(c)]


def _build(gateway: GatewayProc, agent: str, texts: list[str]) -> None:
    from blackboard import WriteRequest
    from consolidation.toc import rebuild

    async def go() -> None:
        async with gateway.admin() as bb:
            scope = f"agent:{agent}:ltm:episodic"
            await bb.scope(scope).write_many([WriteRequest(t) for t in texts])
            await rebuild(bb, scope)

    run_async(go)


async def test_timeline_over_rest_and_mcp(gateway: GatewayProc) -> None:
    from tests.gateway.test_mcp import mcp_client, ok

    tok = gateway.token("tina", [])
    gateway.token("omar", [])
    _build(gateway, "tina", ["The pump on line 3 failed.", "Replaced the pump seal."])
    _build(gateway, "omar", ["omar's private note"])
    with gateway.client(tok) as c:
        r = c.get("/v1/timeline", params={"depth": 5})
        assert r.status_code == 200, r.text
        root = r.json()
        assert root["id"] == "root" and root["count"] == 2 and "pump" in root["keywords"]
        [ref] = _segments(root)
        got = c.get("/v1/timeline/expand", params={"segment": ref})
        assert got.status_code == 200, got.text
        assert [e["value"] for e in got.json()["entries"]] == [
            "The pump on line 3 failed.", "Replaced the pump seal."]
        theirs = ref.replace("agent:tina:", "agent:omar:")
        assert c.get("/v1/timeline/expand", params={"segment": theirs}).status_code == 403
        for params, field in (({"at": "2023-13"}, "at"), ({"depth": -1}, "depth"),
                              ({"at": "2023", "level": "era"}, "level"),
                              ({"segment": "agent:tina:stm#d2023-01-01"}, "segment")):
            path = "/v1/timeline/expand" if "segment" in params else "/v1/timeline"
            bad = c.get(path, params=params)
            assert bad.status_code == 422, bad.text
            assert bad.json()["field"].endswith(field), bad.json()
    async with mcp_client(gateway, tok) as m:
        node = ok(await m.call_tool("timeline", {"depth": 5}))["node"]
        grips = ok(await m.call_tool("expand", {"segment": _segments(node)[0]}))
        refused = await m.call_tool("expand", {"segment": theirs})
    assert len(grips["entries"]) == 2 and refused.is_error
    from memory.remote import RemoteMemory

    async with RemoteMemory(gateway.url, tok) as r:  # the same over the Python client
        tree = await r.timeline(depth=5)
        assert tree.node.count == 2
        assert len(await r.expand(tree.children[0].children[0].children[0].children[0]
                                  .children[0].node.ref)) == 2
