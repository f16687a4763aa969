"""``JsonRoute`` (the gateway's recall and store, issue 24): the caller before the body,
the body validated from its bytes, the endpoint's model rendered, FastAPI's OpenAPI
schema unchanged; a route of another shape refused when built. In-process."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request, Response
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict

from gateway.errors import TooManyRequests, install_handlers
from gateway.routes.json_route import JsonRoute, json_post, json_route


class In(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    n: int = 1


class Out(BaseModel):
    name: str
    n: int
    note: str = "ok"


async def who(request: Request) -> str:
    if request.headers.get("authorization") != "Bearer good":
        raise TooManyRequests("no: over the limit")
    return "alice"


Who = Annotated[str, Depends(who)]


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    install_handlers(app)
    router = APIRouter(prefix="/v1")

    @json_post(router, "/things", status_code=201, response_model=Out)
    async def things(body: In, caller: Who) -> Out:
        return Out(name=f"{caller}:{body.name}", n=body.n)

    @json_post(router, "/raw")
    async def raw(body: In, caller: Who) -> Response:
        return Response(b'{"raw":true}', media_type="application/json")

    @json_post(router, "/wrong", response_model=Out)
    async def wrong(body: In, caller: Who) -> Out:
        return {"name": "x", "n": 1}  # type: ignore[return-value]

    @json_route(router, "/things/{thing}", methods=("PATCH",), response_model=Out)
    async def patch(thing: Annotated[str, Path(json_schema_extra={"pattern": "^[a-z]+$"})],
                    body: In, caller: Who) -> Out:
        return Out(name=f"{thing}<-{body.name}", n=body.n)

    app.router.routes.extend(router.routes)
    return TestClient(app, raise_server_exceptions=False)


GOOD = {"authorization": "Bearer good"}


def test_the_endpoint_gets_the_caller_and_the_body_and_its_model_is_rendered(client):
    r = client.post("/v1/things", json={"name": "café"}, headers=GOOD)
    assert r.status_code == 201 and r.json() == {"name": "alice:café", "n": 1, "note": "ok"}
    assert r.headers["content-type"] == "application/json"
    r = client.post("/v1/raw", json={"name": "x"}, headers=GOOD)
    assert r.status_code == 200 and r.json() == {"raw": True}


@pytest.mark.parametrize("ctype", ["application/json; charset=utf-8",
                                   "Application/JSON", "application/vnd.x+json"])
def test_json_content_types_are_parsed(client, ctype):
    r = client.post("/v1/things", content=b'{"name": "x", "n": 3}',
                    headers={**GOOD, "content-type": ctype})
    assert r.status_code == 201 and r.json()["n"] == 3, r.text


def test_string_path_parameters_are_passed_as_matched(client):
    r = client.patch("/v1/things/café", json={"name": "x", "n": 2}, headers=GOOD)
    assert r.status_code == 200 and r.json()["name"] == "café<-x", r.text
    r = client.post("/v1/things/abc", json={"name": "x"}, headers=GOOD)
    assert r.status_code == 405, r.text


@pytest.mark.parametrize(("raw", "ctype", "says"), [
    (b'{"name": "x"}', "text/plain", "send a JSON object with the fields name, n"),
    (b'{"name": "x"}', None, "send a JSON object with the fields name, n"),
    (b"", "application/json", "required, missing from the body"),
    (b"[1]", "application/json", "send a JSON object with the fields name, n"),
    (b'{"name": "x", "n": "many"}', "application/json", "valid integer"),
    (b'{"name": "x", "nm": 2}', "application/json", "nm: unknown field; did you mean 'name'?"),
])
def test_bad_bodies_are_the_422s_of_any_route(client, raw, ctype, says):
    headers = {**GOOD, **({"content-type": ctype} if ctype else {})}
    r = client.post("/v1/things", content=raw, headers=headers)
    assert r.status_code == 422 and r.json()["error"] == "validation", r.text
    assert says in r.json()["detail"], r.text


def test_the_caller_is_refused_before_the_body_is_read(client):
    """An unauthenticated (here: refused) caller learns nothing from its body."""
    r = client.post("/v1/things", content=b"{not json",
                    headers={"content-type": "application/json"})
    assert r.status_code == 429 and r.json()["error"] == "rate_limited", r.text


def test_an_endpoint_returning_other_than_its_model_is_an_internal_error(client):
    r = client.post("/v1/wrong", json={"name": "x"}, headers=GOOD)
    assert r.status_code == 500 and r.json()["error"] == "internal", r.text


def test_the_openapi_schema_is_fastapis(client):
    op = client.get("/openapi.json").json()["paths"]["/v1/things"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/In"}
    assert "201" in op["responses"]
    assert op["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Out"}


async def _q(request: Request, page: int = Query(1)) -> int:
    return page


@pytest.mark.parametrize("shape", ["query", "two_bodies", "no_dependency", "dep_params",
                                   "int_path", "constrained_path", "optional_body"])
def test_a_route_of_another_shape_is_refused_when_built(shape):
    router = APIRouter()
    if shape == "query":
        async def ep(body: In, caller: Who, page: int = 1) -> Response: ...
    elif shape == "two_bodies":
        async def ep(body: In, other: Out, caller: Who) -> Response: ...  # type: ignore[misc]
    elif shape == "no_dependency":
        async def ep(body: In) -> Response: ...  # type: ignore[misc]
    elif shape == "dep_params":
        async def ep(body: In, caller: Annotated[int, Depends(_q)]) -> Response: ...  # type: ignore[misc]
    elif shape == "int_path":
        async def ep(x: int, body: In, caller: Who) -> Response: ...  # type: ignore[misc]
    elif shape == "constrained_path":
        async def ep(x: Annotated[str, Path(max_length=3)], body: In,  # type: ignore[misc]
                     caller: Who) -> Response: ...
    else:
        async def ep(caller: Who, body: In | None = None) -> Response: ...  # type: ignore[misc]
    path = "/x/{x}" if shape.endswith("_path") else "/x"
    with pytest.raises(TypeError, match="JsonRoute /x"):
        json_post(router, path)(ep)


def test_the_gateways_json_routes_and_the_fixed_ones_matched_first():
    from gateway.app import create_app
    from gateway.settings import GatewaySettings

    app = create_app(GatewaySettings(redis_url="redis://127.0.0.1:1", insecure_local=True))
    routes = app.router.routes
    got = {(r.path, *sorted(r.methods)) for r in routes if isinstance(r, JsonRoute)}
    assert got == {("/v1/memories", "POST"), ("/v1/recall", "POST"),
                   ("/v1/memories/batch", "POST"), ("/v1/memories/{entry_id}", "PATCH"),
                   ("/v1/sessions/{session}/messages", "POST"), ("/v1/context", "POST"),
                   ("/v1/feedback", "POST"), ("/v1/beliefs/{belief_id}/correct", "POST")}
    first = [r.path for r in routes[:5]]
    assert first == ["/v1/memories", "/v1/memories/batch", "/v1/recall", "/v1/context",
                     "/v1/feedback"], first
