"""MCP at /mcp of a real gateway process, through the official SDK's own client over
streamable HTTP: the tool list an LLM sees, every tool called, and every cross-agent
attempt refused (and counted)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from gateway.tokens import encode_token, parse_token
from tests.gateway.gateway_support import GatewayProc

TOOLS = {"remember", "recall", "forget", "list_tags", "memory_map", "confirm", "correct",
         "context", "feedback", "timeline", "expand"}


@asynccontextmanager
async def mcp_client(gw: GatewayProc, token: str | None) -> AsyncIterator[Client]:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=auth, timeout=30)
    async with http, Client(streamable_http_client(gw.url + "/mcp", http_client=http)) as c:
        yield c


def ok(r: CallToolResult) -> Any:
    assert not r.is_error, r.content
    assert r.structured_content is not None
    return r.structured_content


def refused(r: CallToolResult) -> str:
    assert r.is_error, r.structured_content
    text = r.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    return str(text)


def denied_count(gw: GatewayProc) -> float:
    total = 0.0
    for m in re.finditer(r'^gateway_access_denied_total\{([^}]*)\} (\S+)$', gw.metrics(), re.M):
        if 'route="/mcp"' in m.group(1):
            total += float(m.group(2))
    return total


async def test_tools_listed_with_schemas_and_each_called(gateway: GatewayProc) -> None:
    tok = gateway.token("alice", ["t1"])
    async with mcp_client(gateway, tok) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == TOOLS
        for t in tools.values():
            assert t.description and len(t.description) > 20, t.name
            for name, prop in t.input_schema.get("properties", {}).items():
                assert prop.get("description"), f"{t.name}.{name} has no description"
        assert "content" in tools["remember"].input_schema["required"]
        levels = tools["remember"].input_schema["properties"]["level"]["enum"]
        assert "working" in levels and "semantic" in levels

        a = ok(await c.call_tool("remember", {
            "content": "The staging database password rotates every Friday",
            "tags": ["ops", "fact"], "importance": 0.9}))
        assert a["scope"] == "agent:alice:working"
        b = ok(await c.call_tool("remember", {"content": "Team lunch is on Thursdays",
                                              "team": "t1", "level": "semantic",
                                              "tags": ["social"]}))
        assert b["scope"] == "team:t1:ltm:semantic"

        got = ok(await c.call_tool("recall", {"query": "when does the password rotate",
                                              "explain": True}))
        assert got["memories"][0]["id"] == a["id"]
        assert set(got["memories"][0]["components"]) >= {"bm25", "fused", "recency"}
        only = ok(await c.call_tool("recall", {"tags_all": ["social"],
                                               "levels": ["semantic"]}))
        assert [m["id"] for m in only["memories"]] == [b["id"]]
        none = ok(await c.call_tool("recall", {"query": "password",
                                               "before": "2000-01-01T00:00:00Z"}))
        assert none["memories"] == []

        assert ok(await c.call_tool("list_tags", {})) == {"tags": {"fact": 1, "ops": 1}}
        assert ok(await c.call_tool("list_tags", {"level": "semantic", "team": "t1"})) == {
            "tags": {"social": 1}}
        m = ok(await c.call_tool("memory_map", {"detail": True}))
        assert m["agent"] == "alice" and m["teams"] == ["t1"]
        assert {"agent:alice:working", "team:t1:ltm:semantic"} <= {s["scope"]
                                                                   for s in m["scopes"]}

        assert ok(await c.call_tool("forget", {"id": a["id"]})) == {"id": a["id"],
                                                                    "forgotten": True}
        assert "NotFound" in refused(await c.call_tool("forget", {"id": a["id"]}))
        bad = refused(await c.call_tool("recall", {"tags_all": ["x"], "tags_none": ["x"]}))
        assert "contradictory" in bad
        assert "level" in refused(await c.call_tool("remember", {"content": "x",
                                                                 "level": "nope"}))
    async with mcp_client(gateway, gateway.operator_token()) as ops:
        m = ok(await ops.call_tool("memory_map", {"detail": True}))
        assert m["agent"] == "*" and "team:t1:ltm:semantic" in {s["scope"] for s in m["scopes"]}
    # the REST view agrees: the forgotten entry is gone, the team one is there
    with gateway.client(tok) as h:
        assert h.get(f"/v1/memories/{a['id']}").status_code == 404
        assert h.get(f"/v1/memories/{b['id']}").json()["value"] == "Team lunch is on Thursdays"


async def test_cross_agent_attempts_refused_and_counted(gateway: GatewayProc) -> None:
    alice, bob = gateway.token("alice", ["t1"]), gateway.token("bob", ["t2"])
    with gateway.client(bob) as h:
        secret = h.post("/v1/memories", json={"value": "bob's secret plan",
                                              "tags": ["secret"]}).json()
        team = h.post("/v1/memories", json={"value": "t2 roadmap", "level": None,
                                            "team": "t2"}).json()
    before = denied_count(gateway)
    async with mcp_client(gateway, alice) as c:
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"query": "secret plan", "scopes": ["agent:bob:working"]}),
            ("recall", {"query": "roadmap", "scopes": ["team:t2"]}),
            ("recall", {"scopes": ["agent:bob:*"]}),  # a forged pattern, not a scope id
            ("forget", {"id": secret["id"], "scope": "agent:bob:working"}),
            ("forget", {"id": team["id"], "scope": "team:t2"}),
            ("list_tags", {"team": "t2"}),
            ("remember", {"content": "planted", "team": "t2"}),
            ("forget", {"id": "01J000", "scope": "collective"}),  # read-only for agents
        ]
        for tool, args in attempts:
            text = refused(await c.call_tool(tool, args))
            assert "AccessDenied" in text or "InvalidScope" in text, (tool, args, text)
            assert "secret plan" not in text and "roadmap" not in text
        # Without a scope, forget searches only alice's scopes: bob's id is not found.
        assert "NotFound" in refused(await c.call_tool("forget", {"id": secret["id"]}))
        # Her own recall never returns bob's memories.
        got = ok(await c.call_tool("recall", {"query": "secret plan roadmap"}))
        assert all(m["scope"].startswith(("agent:alice:", "team:t1", "collective"))
                   for m in got["memories"])
    assert denied_count(gateway) - before >= 7
    with gateway.client(bob) as h:  # nothing of bob's was touched
        assert h.get(f"/v1/memories/{secret['id']}").status_code == 200
        assert h.get(f"/v1/memories/{team['id']}").status_code == 200
        assert h.get("/v1/tags", params={"team": "t2"}).json()["tags"] == {}


def test_mcp_without_a_valid_token_is_401(gateway: GatewayProc) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    hdrs = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer bbt_forged_e30"}):
        r = httpx.post(gateway.url + "/mcp", json=init, headers=hdrs | auth, timeout=60)
        assert r.status_code == 401, r.text
        body = json.loads(r.text)
        assert body["error"] == "unauthorized" and body["detail"]
    rec, tok = gateway.token_record("carol")
    gateway.revoke(rec.id)
    r = httpx.post(gateway.url + "/mcp", json=init,
                   headers=hdrs | {"Authorization": f"Bearer {tok}"}, timeout=60)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def _denied_by_redis(gw: GatewayProc) -> float:
    return sum(float(v) for labels, v in re.findall(
        r'^gateway_access_denied_total\{([^}]*)\} (\S+)$', gw.metrics(), re.M)
        if 'route="/mcp"' in labels and 'by_redis="yes"' in labels)


async def test_a_token_lying_about_its_claims_is_confined_by_redis(
        gateway: GatewayProc) -> None:
    """Alice's credential in a token claiming agent bob and team t2: the agent is taken
    from the Redis user (alice), and the forged team passes the gateway's own check but
    Redis refuses its keys (NOPERM), counted as refused by Redis."""
    with gateway.client(gateway.token("bob", ["t2"])) as h:
        plan = h.post("/v1/memories", json={"value": "t2 secret plan", "level": None,
                                            "team": "t2", "tags": ["plan"]}).json()
    forged = encode_token(replace(parse_token(gateway.token("alice")), agent="bob",
                                  teams=("t2",)))
    before = _denied_by_redis(gateway)
    async with mcp_client(gateway, forged) as c:
        mine = ok(await c.call_tool("remember", {"content": "as whom?"}))
        assert mine["scope"] == "agent:alice:working"
        for tool, args in (("recall", {"query": "secret plan", "scopes": ["team:t2"]}),
                           ("remember", {"content": "planted", "team": "t2"}),
                           ("forget", {"id": plan["id"], "scope": "team:t2"}),
                           ("list_tags", {"team": "t2"})):
            text = refused(await c.call_tool(tool, args))
            assert "AccessDenied" in text and "secret plan" not in text, (tool, text)
    assert _denied_by_redis(gateway) - before >= 4
    with gateway.client(gateway.token("bob", ["t2"])) as h:
        assert h.get(f"/v1/memories/{plan['id']}").json()["value"] == "t2 secret plan"
        assert h.get("/v1/tags", params={"team": "t2"}).json()["tags"] == {"plan": 1}

