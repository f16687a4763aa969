"""MCP at /mcp of gateway processes started with their own settings: the per-token rate
limit (shared with REST) and ``--insecure-local`` (no token; DNS-rebinding protection).

Apart from tests/gateway/test_mcp.py: these start further gateway processes on the same
Redis, and the module gateway there keeps its cached token pools across tests."""

from __future__ import annotations

from typing import Any

import httpx

from tests.gateway.gateway_support import GatewayProc
from tests.gateway.test_mcp import mcp_client, ok


def test_mcp_shares_the_tokens_rate_limit(start_gateway: Any) -> None:
    gw = start_gateway(rate=0.2, burst=3)
    tok = gw.token("alice")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_tags", "arguments": {}}}
    hdrs = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {tok}",
            "MCP-Protocol-Version": "2025-06-18"}
    with gw.client(tok) as h:
        assert h.get("/v1/tags").status_code == 200  # REST and MCP draw on one bucket
    codes = [httpx.post(gw.url + "/mcp", json=call, headers=hdrs, timeout=60).status_code
             for _ in range(3)]
    assert codes[:2] == [200, 200] and codes[2] == 429, codes
    r = httpx.post(gw.url + "/mcp", json=call, headers=hdrs, timeout=60)
    assert r.status_code == 429 and r.json()["error"] == "rate_limited"
    assert int(r.headers["Retry-After"]) >= 1



async def test_insecure_local_mcp_needs_no_token_but_refuses_foreign_hosts(
        gateway: GatewayProc, start_gateway: Any) -> None:
    """``--insecure-local``: no token, and (DNS rebinding) a request whose Host or Origin
    is not localhost's is refused before any tool runs."""
    gw = start_gateway(insecure_local="true", redis_url=gateway.redis.admin_url)
    async with mcp_client(gw, None) as c:
        e = ok(await c.call_tool("remember", {"content": "local note", "tags": ["note"]}))
        assert e["scope"] == "agent:local:working"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remember",
                       "arguments": {"content": "rebound", "tags": ["rebound"]}}}
    hdrs = {"Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18"}
    async with httpx.AsyncClient(timeout=60) as http:
        for bad in ({"Host": "evil.example:80"}, {"Origin": "http://evil.example"}):
            r = await http.post(gw.url + "/mcp", json=call, headers=hdrs | bad)
            assert r.status_code in (403, 421), (bad, r.status_code, r.text)
    with gw.client() as h:
        assert h.get("/v1/tags").json()["tags"] == {"note": 1}
