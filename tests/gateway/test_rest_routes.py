"""Routes, budgets and citations on every surface (issue 28 items 3-4): the REST
response (and RemoteMemory's reading of it), the MCP recall tool's parameters and its
compact answer, the CLI's options, ``--json`` and its one-line note. In-process: a
gateway app on an insecure-local connection, the MCP server without a transport, the
CLI through typer's runner."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from blackboard import Entry
from cli.app import app as cli_app
from gateway.app import create_app
from gateway.mcp_render import Recalled
from gateway.mcp_server import build_mcp
from gateway.settings import GatewaySettings
from memory.response_bodies import RecallResponse
from retrieval.completeness import RecallHits, RouteReport
from retrieval.scoring import ScoredEntry

S = "agent:a1:working"


@pytest.fixture()
def client(redis_url: str, clean_redis: object) -> Iterator[TestClient]:
    gw = create_app(GatewaySettings(redis_url=redis_url, insecure_local=True, rate=0))
    with TestClient(gw, base_url="http://127.0.0.1") as c:
        yield c


def test_rest_recall_reports_its_route_and_refuses_bad_values(client: TestClient) -> None:
    for text in ("Acme pays net-30", "the invoice INV-4471 was paid late"):
        assert client.post("/v1/memories", json={"value": text}).status_code == 201
    r = client.post("/v1/recall", json={"query": "INV-4471", "intent": "locate",
                                        "budget_tokens": 500})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["route"] == {"intent": "locate", "route": "bm25", "indexes": ["bm25"],
                             "notes": ["dense not asked: bm25 found the words (locate)"],
                             "partial": False, "nodes_visited": 0}
    assert body["hits"][0]["cites"] == [] and body["nodes"] == []
    # the recall's own time, for a caller to tell it from the gateway's and the network's
    name, _, dur = r.headers["server-timing"].partition(";dur=")
    assert name == "recall" and 0 < float(dur) < 60_000, r.headers["server-timing"]
    doc = client.get("/openapi.json").json()["paths"]["/v1/recall"]["post"]["responses"]
    assert "Server-Timing" in doc["200"]["headers"]
    for bad, field in (({"intent": "browse"}, "intent"), ({"timeout_ms": 0}, "timeout_ms"),
                       ({"budget_tokens": "9"}, "budget_tokens"),
                       ({"timeout_ms": 10**9}, "timeout_ms")):
        r = client.post("/v1/recall", json={"query": "x", **bad})
        assert r.status_code == 422 and field in r.text, (bad, r.text)


def _hits() -> RecallHits:
    raw = Entry(id="w1", scope=S, value="Acme pays net-30")
    derived = Entry(id="s1", scope="agent:a1:stm", value="Acme pays net-30 (summary)",
                    source=("c1",))
    return RecallHits(
        [ScoredEntry(raw, S, 0.5, 1.2, 0.9, 1.0, 1.0, 0.5, 0.9),
         ScoredEntry(derived, derived.scope, None, 0.7, 0.4, 1.0, 1.0, 0.5, 0.4,
                     cites=("w1",))],
        3, RouteReport(intent="time_boxed", route="hybrid", indexes=("bm25",),
                       notes=("dense failed: ConnectionError",), partial=True),
        [{"level": "month", "at": "2023-05", "count": 2}])


def test_remote_and_mcp_read_the_report_and_citations() -> None:
    hits = _hits()
    wire = json.loads(RecallResponse.of(hits).model_dump_json())
    back = RecallResponse.model_validate(wire).to_hits()  # what RemoteMemory returns
    assert back.route == hits.route and back.dense_pending == 3 and back.nodes == hits.nodes
    assert [h.cites for h in back] == [(), ("w1",)]
    short = Recalled.of(RecallResponse.of(hits), explain=False).model_dump(exclude_none=True)
    assert short["route"] == {"intent": "time_boxed", "route": "hybrid", "indexes": ["bm25"],
                              "notes": ["dense failed: ConnectionError"], "partial": True}
    assert "cites" not in short["memories"][0] and short["memories"][1]["cites"] == ["w1"]


def test_mcp_recall_takes_intent_and_budgets() -> None:
    async def props() -> dict[str, Any]:
        tools = await build_mcp(lambda ctx: None).list_tools()  # type: ignore[arg-type,return-value]
        (recall,) = [t for t in tools if t.name == "recall"]
        return dict(recall.input_schema["properties"])

    p = asyncio.run(props())
    assert p["intent"]["enum"] == ["answer", "locate", "explore", "time_boxed"]
    assert p["timeout_ms"]["anyOf"][0]["minimum"] == 1
    assert p["budget_tokens"]["anyOf"][0]["maximum"] == 200_000


def test_cli_recall_options_json_and_note(redis_url: str, clean_redis: object) -> None:
    run = CliRunner().invoke
    url = ["--redis-url", redis_url]
    bad = run(cli_app, ["recall", "x", "--agent", "a1", "--timeout-ms", "0", *url])
    assert bad.exit_code == 2 and "--timeout-ms timeout_ms must be between 1" in bad.output
    bad = run(cli_app, ["recall", "x", "--agent", "a1", "--intent", "browse", *url])
    assert bad.exit_code == 2 and "--intent" in bad.output
    assert len(bad.output.strip().splitlines()) == 1, bad.output

    async def seed() -> None:
        from blackboard import Blackboard
        from memory import AgentMemory

        async with Blackboard.connect(redis_url, partitions=8) as bb, \
                AgentMemory(bb, "a1", default_retriever=False) as m:
            await m.store("the invoice INV-4471 was paid late")

    asyncio.run(seed())
    res = run(cli_app, ["recall", "INV-4471", "--agent", "a1", "--intent", "locate",
                        "--json", *url])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)
    assert hits[0]["cites"] == [] and hits[0]["route"]["route"] == "bm25"
    assert "intent locate: route bm25 (bm25)" in res.stderr
    table = run(cli_app, ["recall", "INV-4471", "--agent", "a1", *url])
    assert table.exit_code == 0 and "route hybrid (" in table.stderr
