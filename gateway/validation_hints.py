"""What a 422 says beyond pydantic's words: what to send instead.

pydantic says *what* is wrong ("Extra inputs are not permitted", "Input should be a valid
list"); a client also needs what is accepted there: the fields of the object at that place
(with the closest one to a typo), the JSON type it sent, the shape of the body. The
route's body model (``request.scope["route"].body_field``) gives the fields.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request

from memory.aliases import canonical_name

__all__ = ["body_model", "hint"]

#: pydantic's prefix on a validator's own message (which already says what to send).
_VALUE_ERROR = "Value error, "
#: A body that is not a JSON object (validated as a dict, from the text, or as a mapping).
_NOT_AN_OBJECT = frozenset({"model_attributes_type", "model_type", "dict_type"})
_JSON_TYPES = {str: "a string", int: "a number", float: "a number", bool: "true/false",
               list: "an array", dict: "an object", type(None): "null"}


def body_model(request: Request) -> type[BaseModel] | None:
    """The pydantic model of the route's JSON body, if it has one."""
    field = getattr(request.scope.get("route"), "body_field", None)
    return _model_in(getattr(getattr(field, "field_info", None), "annotation", None))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds (itself, or inside Optional / list / dict)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            if (m := _model_in(arg)) is not None:
                return m
    return None


def _model_at(model: type[BaseModel] | None, path: Sequence[str | int]) -> type[BaseModel] | None:
    """The model of the object at ``path`` below ``model`` (list indexes skipped)."""
    for seg in path:
        if model is None:
            return None
        if isinstance(seg, int):
            continue
        field = model.model_fields.get(seg)
        model = _model_in(field.annotation) if field is not None else None
    return model


def _names(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _unknown(name: str, model: type[BaseModel] | None) -> str:
    if (new := canonical_name(name)) != name:  # an old name given beside its new one
        return f"{name!r} is the deprecated name of {new!r}: send {new} only"
    if model is None:
        return "unknown field: leave it out"
    names = _names(model)
    close = difflib.get_close_matches(name, names, n=1)
    mean = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field; {mean}accepted: {', '.join(names)}"


def _sent(value: Any) -> str:
    return next((v for t, v in _JSON_TYPES.items() if type(value) is t), type(value).__name__)


def hint(err: dict[str, Any], model: type[BaseModel] | None) -> str:
    """One error as ``what is wrong: what to send``, without the field name."""
    where = next(iter(err.get("loc", ())), "body")
    loc = [p for p in err.get("loc", ()) if p not in ("body", "query", "path")]
    kind = str(err.get("type", ""))
    msg = str(err.get("msg", "invalid")).removeprefix(_VALUE_ERROR)
    if kind == "json_invalid":  # FastAPI's loc ends at the character it stopped at
        why = (err.get("ctx") or {}).get("error") or msg
        return f"Invalid JSON: {str(why).removeprefix('Invalid JSON: ')}" + (
            f" (at character {loc[-1]})" if loc else "")
    if kind == "extra_forbidden" and loc:
        return _unknown(str(loc[-1]), _model_at(model, loc[:-1]))
    if kind == "missing":
        return f"required, missing from the {where}"
    if not loc and kind in _NOT_AN_OBJECT and model is not None:
        return f"send a JSON object with the fields {', '.join(_names(model))}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{msg} (got {_sent(err.get('input'))})"
    return msg
