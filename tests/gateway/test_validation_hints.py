"""REST input errors say what to send instead (issue 30 item 4): the 422 body names the
field and what is accepted there. In-process: the gateway's own handlers
(``install_handlers``) on routes taking the gateway's own body models."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.testclient import TestClient

from gateway.errors import install_handlers
from gateway.routes.json_route import JsonRoute, json_post
from memory.request_bodies import BatchStore, RecallRequest, StoreRequest


async def _nobody(request: Request) -> None:
    return None


Nobody = Annotated[None, Depends(_nobody)]


@pytest.fixture(scope="module", params=["fastapi", "json_route"])
def client(request: pytest.FixtureRequest) -> TestClient:
    """The routes as FastAPI serves them, and as :class:`JsonRoute` (the gateway's
    JSON-body routes): the same 422s."""
    app = FastAPI()
    install_handlers(app)
    router = APIRouter()
    post = router.post if request.param == "fastapi" else partial(json_post, router)

    @post("/store")
    async def store(body: StoreRequest, _: Nobody) -> Response:
        return Response(b"{}")

    @post("/batch")
    async def batch(body: BatchStore, _: Nobody) -> Response:
        return Response(b"{}")

    @post("/recall")
    async def recall(body: RecallRequest, _: Nobody) -> Response:
        return Response(b"{}")

    app.router.routes.extend(router.routes)
    return TestClient(app)


@pytest.mark.parametrize(("path", "body", "field", "says"), [
    # a typo in a nested object: the closest name and every accepted one
    ("/batch", {"items": [{"value": "x", "tgas": ["a"]}]}, "items.0.tgas",
     "unknown field; did you mean 'tags'? accepted: value, level, team, tags, metadata, "
     "key, ttl, importance"),
    ("/recall", {"tag_filter": {"all": ["x"]}}, "tag_filter.all",
     "did you mean 'all_of'? accepted: all_of, any_of, none_of"),
    # a bad value: the accepted values
    ("/store", {"value": "x", "level": "longterm"}, "level",
     "levels: sensory, working, stm, episodic, semantic, procedural"),
    ("/recall", {"fusion": "max"}, "fusion", "Input should be 'convex' or 'rrf'"),
    # the wrong JSON type: what was sent
    ("/store", {"value": "x", "tags": "a"}, "tags", "valid {list} (got a string)"),
    ("/store", {}, "value", "required, missing from the body"),
    ("/recall", [1], None, "send a JSON object with the fields query, tag_filter"),
    # an old name beside its new one
    ("/recall", {"limit": 1, "max_results": 2}, "limit",
     "'limit' is the deprecated name of 'max_results': send max_results only"),
])
def test_a_422_says_what_to_send(client: TestClient, path: str, body: Any,
                                 field: str | None, says: str) -> None:
    r = client.post(path, json=body)
    got = r.json()
    assert r.status_code == 422 and got["error"] == "validation" and got["field"] == field
    # pydantic names a JSON type by JSON's word when it validates the JSON text itself
    says = says.format(list="array" if client.app.router.routes[-1].__class__ is JsonRoute
                       else "list")
    assert says in got["detail"], got["detail"]
    assert "Value error" not in got["detail"]


@pytest.mark.parametrize("raw", [b"[", b'{"query": "x"', b"\xff\xfe"])
def test_malformed_json_names_no_field(client: TestClient, raw: bytes) -> None:
    """Not JSON: the 422 says so and where; no field (a position is not one)."""
    r = client.post("/recall", content=raw, headers={"content-type": "application/json"})
    got = r.json()
    assert r.status_code == 422 and got["field"] is None, got
    assert got["detail"].startswith("body: Invalid JSON: "), got["detail"]
