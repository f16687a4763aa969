"""``JsonRoute``: a JSON-body route served without FastAPI's per-request machinery.

The hot routes (recall, store) are ``endpoint(body: Model, caller: CallerDep)``, and
so are the REST API's other JSON-body routes (some with string path parameters). FastAPI
serves such a route by reading the body, decoding it with ``json.loads``, parsing the
content type with ``email.message``, solving the dependency graph, validating the decoded
dict, then validating the returned model again: ~0.2 ms of Python a request, the largest
part of REST's cost over the library (issue 24). This route does the same steps directly:

1. the caller, by the route's own dependency (``authorized``: token, Redis login, rate
   bucket) — before the body is even read, so an unauthenticated request learns nothing
   from its body's errors (FastAPI's order answered a malformed body with 422 first);
2. the body, validated from its raw bytes by the model (``model_validate_json``), its
   errors raised as FastAPI's :class:`RequestValidationError` (``loc`` under ``"body"``),
   so the gateway's 422 handler renders them as for any other route;
3. the endpoint, with the path's string parameters as matched (FastAPI's ``str`` path
   parameters are not validated either: a pattern in their schema is documentation); a
   returned model (of the route's ``response_model``) is serialised as is.

Errors propagate to the app's exception middleware and its handlers, as any route's do.
The OpenAPI schema is FastAPI's: the route is an :class:`APIRoute` with the endpoint's
signature unchanged. A route that does not have this shape is refused when it is built.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["JsonRoute", "json_post", "json_route"]

Endpoint = Callable[..., Awaitable[Any]]


class JsonRoute(APIRoute):
    """An :class:`APIRoute` for ``endpoint(<body>: Model, <caller>: Depends(f),
    [<name>: str path parameters])`` where ``f`` takes only the :class:`Request` (module
    docstring)."""

    def __init__(self, path: str, endpoint: Endpoint, **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        d = self.dependant
        model = getattr(self.body_field.field_info, "annotation", None) if self.body_field \
            else None
        fits = (isinstance(model, type) and issubclass(model, BaseModel)
                and len(d.body_params) == 1 and not self._embed_body_fields
                and not (d.query_params or d.header_params or d.cookie_params
                         or d.request_param_name)
                and all(p.field_info.annotation is str and not p.field_info.metadata
                        for p in d.path_params)
                and len(d.dependencies) == 1 and self._takes_request_only(d.dependencies[0]))
        if not fits:
            raise TypeError(f"JsonRoute {path}: the endpoint must take exactly a pydantic "
                            "body, one dependency of the request alone and unconstrained "
                            "str path parameters")
        dep = d.dependencies[0]
        assert dep.call is not None and dep.name is not None and model is not None
        self._model: type[BaseModel] = model
        self._body_name: str = d.body_params[0].name
        self._caller: Callable[[Request], Awaitable[Any]] = dep.call
        self._caller_name: str = dep.name
        self._path_names: tuple[str, ...] = tuple(p.name for p in d.path_params)
        self.app = self._serve

    @staticmethod
    def _takes_request_only(dep: Any) -> bool:
        return bool(dep.call is not None and dep.name and dep.request_param_name
                    and not (dep.dependencies or dep.body_params or dep.query_params
                             or dep.path_params or dep.header_params or dep.cookie_params))

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        caller = await self._caller(request)
        body = _parsed(self._model, request.headers.get("content-type"), await request.body())
        args = {name: scope["path_params"][name] for name in self._path_names}
        result = await self.endpoint(**args, **{self._body_name: body,
                                                self._caller_name: caller})
        await self._response(result)(scope, receive, send)

    def _response(self, result: Any) -> Response:
        if isinstance(result, Response):
            return result
        if type(result) is not self.response_model:
            raise TypeError(f"{self.path}: the endpoint returned {type(result).__name__}, "
                            f"not its response_model {self.response_model!r}")
        return Response(result.model_dump_json().encode(), status_code=self.status_code or 200,
                        media_type="application/json")


def _is_json(content_type: str | None) -> bool:
    """``application/json`` or ``application/*+json``, parameters ignored (FastAPI's
    strict content type: a body of another type is not parsed)."""
    if not content_type:
        return False
    main, _, sub = content_type.partition(";")[0].strip().lower().partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


def _parsed(model: type[BaseModel], content_type: str | None, raw: bytes) -> BaseModel:
    """``raw`` as ``model``, or the :class:`RequestValidationError` FastAPI would raise."""
    if not raw:
        raise RequestValidationError([{"type": "missing", "loc": ("body",),
                                       "msg": "Field required", "input": None}])
    if not _is_json(content_type):
        raise RequestValidationError([{
            "type": "model_attributes_type", "loc": ("body",), "input": raw,
            "msg": "Input should be a valid dictionary or object to extract fields from"}])
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


def json_route(router: APIRouter, path: str, *, methods: tuple[str, ...] = ("POST",),
               **kwargs: Any) -> Callable[[Endpoint], Endpoint]:
    """``@router.api_route(path, methods=methods, **kwargs)`` served as a
    :class:`JsonRoute`."""

    def add(endpoint: Endpoint) -> Endpoint:
        router.add_api_route(path, endpoint, methods=list(methods),
                             route_class_override=JsonRoute, **kwargs)
        return endpoint

    return add


def json_post(router: APIRouter, path: str, **kwargs: Any) -> Callable[[Endpoint], Endpoint]:
    """``@router.post(path, **kwargs)`` served as a :class:`JsonRoute`."""
    return json_route(router, path, methods=("POST",), **kwargs)
