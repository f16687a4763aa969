"""Query parameters that several routes take, each checked by one rule."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import AfterValidator

from blackboard import InvalidArgument
from blackboard.validation import NAME_PATTERN, validate_name
from memory.request_bodies import NAME_SCHEMA

__all__ = ["AgentQuery", "NameQuery"]


def _name(value: str | None) -> str | None:
    # The pattern (pydantic's regex engine has no look-around) checks the characters; the
    # reserved segments are refused here, with the library's message.
    if value is None:
        return None
    try:
        return validate_name(value, "name")
    except InvalidArgument as exc:
        raise ValueError(str(exc)) from None


#: An optional team: :data:`blackboard.validation.NAME_RULE`, not a reserved segment (a 422
#: naming the parameter otherwise); its schema documents both (``NAME_SCHEMA``).
NameQuery = Annotated[str | None, AfterValidator(_name),
                      Query(pattern=NAME_PATTERN, json_schema_extra=NAME_SCHEMA)]

#: An optional agent id, by the same rule.
AgentQuery = Annotated[str | None, AfterValidator(_name), Query(
    pattern=NAME_PATTERN, json_schema_extra=NAME_SCHEMA,
    description=("Whose (default: the token's agent). An agent token may name only itself; "
                 "an operator token any agent."))]
