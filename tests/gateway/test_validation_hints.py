"""REST input errors say what to send instead (issue 30 item 4): the 422 body names the
field and what is accepted there. In-process: the gateway's own handlers
(``install_handlers``) on routes taking the gateway's own body models."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gateway.errors import install_handlers
from memory.wire import BatchStore, RecallRequest, StoreRequest


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    install_handlers(app)

    @app.post("/store")
    async def store(body: StoreRequest) -> dict[str, Any]:
        return {}

    @app.post("/batch")
    async def batch(body: BatchStore) -> dict[str, Any]:
        return {}

    @app.post("/recall")
    async def recall(body: RecallRequest) -> dict[str, Any]:
        return {}

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
    ("/store", {"value": "x", "tags": "a"}, "tags", "valid list (got a string)"),
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
    assert says in got["detail"], got["detail"]
    assert "Value error" not in got["detail"]
