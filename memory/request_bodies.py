"""The request bodies of the memory REST API, and the field schemas they share with its routes.

Pure pydantic (plus the pydantic query model of :mod:`retrieval.query`): the gateway
validates requests with these models (and its path and query parameters with the same
schemas), and :mod:`memory.remote` sends conversation messages as :class:`MessageIn`. A
recall request *is* a :class:`~retrieval.query.MemoryQuery` (as :class:`RecallRequest`,
its ``levels`` named), so the REST query language cannot drift from the library's. The
responses are :mod:`memory.response_bodies`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blackboard.validation import (
    MAX_NAME_LEN,
    MAX_SCOPE_LEN,
    MAX_TAGS,
    RESERVED_SEGMENTS,
    SEGMENT_CHARS,
    TAG_PATTERN,
)
from retrieval.query import MemoryQuery, TagFilter, json_number

from .aliases import rename_aliases
from .levels import LEVEL_LIST, LEVEL_NAMES, MemoryLevel, unknown_level

if TYPE_CHECKING:
    from .conversation import Message

__all__ = [
    "BATCH_MAX",
    "ENTRY_ID_SCHEMA",
    "KEY_SCHEMA",
    "LEVEL_NAMES",
    "LEVEL_SCHEMA",
    "NAME_SCHEMA",
    "SCOPE_SCHEMA",
    "TAGS_SCHEMA",
    "TAG_SCHEMA",
    "BatchStore",
    "MessageIn",
    "MessagesIn",
    "RecallRequest",
    "StoreRequest",
    "TagFilter",
    "UpdateRequest",
    "check_level",
]

#: The most items one batch request may carry (one round trip; bounded so that a single
#: request cannot hold the gateway's event loop for long).
BATCH_MAX = 1000


# What the schema says of the fields the library validates (its errors stay the ones a
# request gets): a client, or a fuzzer, then knows what the gateway accepts. Lone
# surrogates in strings are left to the library's 422.
#: One segment of a scope id: an agent, team or session name.
_SEGMENT = f"(?!({'|'.join(sorted(RESERVED_SEGMENTS))})(:|$)){SEGMENT_CHARS}+"
NAME_SCHEMA: dict[str, Any] = {"pattern": f"^{_SEGMENT}$", "maxLength": MAX_NAME_LEN}
SCOPE_SCHEMA: dict[str, Any] = {"pattern": f"^{_SEGMENT}(:{_SEGMENT})*$",
                                "maxLength": MAX_SCOPE_LEN}
ENTRY_ID_SCHEMA: dict[str, Any] = {"pattern": r"^[0-9A-Za-z_-]{1,64}$"}
TAG_SCHEMA: dict[str, Any] = {"type": "string", "pattern": TAG_PATTERN}
TAGS_SCHEMA: dict[str, Any] = {"items": TAG_SCHEMA}
KEY_SCHEMA: dict[str, Any] = {"pattern": r"^[^\x00-\x1f\x7f]{1,512}$"}
LEVEL_SCHEMA: dict[str, Any] = {"enum": [*LEVEL_NAMES, None]}


class RecallRequest(MemoryQuery):
    """A recall request: the library's query model, as JSON, its ``levels`` named."""

    levels: list[str] | None = Field(default=None, json_schema_extra={
        "minItems": 1, "items": {"enum": list(LEVEL_NAMES)}})

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        # Before the query's own validators (the lens fills max_results only when unset).
        return rename_aliases(data, ("max_results",), "POST /v1/recall")


def check_level(v: str | None) -> str | None:
    """``v`` when it names a memory level (or is None), else ValueError listing them."""
    if v is not None and MemoryLevel.named(v) is None:
        raise ValueError(unknown_level(v))
    return v


class _In(BaseModel):
    # Unknown fields are a client's typo: refuse them (422 naming the field) instead of
    # silently storing something other than what was meant.
    model_config = ConfigDict(extra="forbid")


class StoreRequest(_In):
    """One memory to write (``AgentMemory.store``). ``level=None`` with a ``team`` is the
    team's root scope; ``ttl`` seconds (None: the scope's)."""

    value: Any = Field(description="The memory: a string or any JSON value.",
                       json_schema_extra={"not": {"type": "null"}})
    level: str | None = Field(default="working", description=f"Memory level: {LEVEL_LIST} "
                              "(null: the team's root scope, with a team).",
                              json_schema_extra=LEVEL_SCHEMA)
    team: str | None = Field(default=None, description="Write to this team's scope of the level.",
                             json_schema_extra=NAME_SCHEMA)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS,
                            json_schema_extra=TAGS_SCHEMA)
    metadata: dict[str, Any] = Field(default_factory=dict)
    key: str | None = Field(default=None, description="Optional unique key within the scope.",
                            json_schema_extra=KEY_SCHEMA)
    ttl: float | None = Field(default=None, gt=0,
                              description="Expiry in seconds (ten years at most; "
                                          "ttl_s is its deprecated name).",
                              json_schema_extra={"maximum": 10 * 365 * 86400})
    importance: float = Field(0.5, ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return rename_aliases(data, ("ttl",), "POST /v1/memories")

    @field_validator("level")
    @classmethod
    def _level(cls, v: str | None) -> str | None:
        return check_level(v)

    _numbers = field_validator("ttl", "importance", mode="before")(json_number)

    @field_validator("value")
    @classmethod
    def _present(cls, v: Any) -> Any:
        if v is None:
            raise ValueError("a memory needs a value (a string or JSON value, not null)")
        return v


class BatchStore(_In):
    items: list[StoreRequest] = Field(min_length=1, max_length=BATCH_MAX)


class UpdateRequest(_In):
    """Fields to change on an entry; ``scope`` narrows where it is looked up;
    ``expected_version`` makes the update fail with 409 if someone else changed it."""

    scope: str | None = Field(default=None, json_schema_extra=SCOPE_SCHEMA)
    value: Any = None
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS,
                                   json_schema_extra=TAGS_SCHEMA)
    metadata: dict[str, Any] | None = None
    importance: float | None = Field(None, ge=0.0, le=1.0)
    expected_version: int | None = Field(None, ge=1)

    _numbers = field_validator("importance", "expected_version", mode="before")(json_number)


class MessageIn(_In):
    speaker: str = Field(min_length=1, json_schema_extra={"pattern": r"\S"})
    text: str
    at: datetime | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("at", mode="before")
    @classmethod
    def _iso(cls, v: Any) -> Any:
        # a date-time string, as the schema says (lax mode would read a number as epoch s)
        if v is not None and not isinstance(v, str | datetime):
            raise ValueError("at must be an ISO 8601 date-time string")
        return v

    def to_message(self) -> Message:
        from .conversation import Message

        return Message(self.speaker, self.text, self.at, self.metadata)


class MessagesIn(_In):
    messages: list[MessageIn] = Field(min_length=1, max_length=BATCH_MAX)
    level: str | None = Field(default=MemoryLevel.EPISODIC.value, json_schema_extra=LEVEL_SCHEMA)
    team: str | None = Field(default=None, json_schema_extra=NAME_SCHEMA)

    @field_validator("level")
    @classmethod
    def _level(cls, v: str | None) -> str | None:
        return check_level(v)
