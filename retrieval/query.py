"""The query model: what to look for (text) and the hard filters applied before ranking."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from blackboard.validation import TAG_PATTERN, validate_tag

from .goal import RetrievalContext
from .lens import LensPreset, known_lenses, resolve_lens

__all__ = [
    "MAX_BUDGET_TOKENS", "MAX_TIMEOUT_MS", "TIME_BOXED_TIMEOUT_MS", "Consistency",
    "FusionMethod", "Intent", "MemoryQuery", "RecallOrder", "RetrievalContext", "TagFilter",
    "as_query", "instant_input", "json_number", "past_instant",
]

FusionMethod = Literal["convex", "rrf"]
# "relevance": ranked by score (the hybrid retriever); "newest": listed newest first straight
# from the scopes' Redis indexes (the structured retriever; no text, no index needed).
RecallOrder = Literal["relevance", "newest"]
#: ``immediate``: rank what is indexed now (entries still waiting for a vector by BM25 and
#: the filters; the result says how many, :mod:`retrieval.completeness`); ``semantic``:
#: first wait until every entry of the searched scopes has its vector (bounded).
Consistency = Literal["immediate", "semantic"]
#: What a recall is for, which picks its route (:mod:`retrieval.routes`): ``answer`` the
#: hybrid (dense + BM25), ``locate`` BM25 first (exact words: an id, a name, an error
#: text), ``explore`` the table of contents, ``time_boxed`` the best available route
#: within its budget, stopping there with what it has (marked partial).
Intent = Literal["answer", "locate", "explore", "time_boxed"]
#: The longest ``timeout_ms`` a recall may ask for: more is a mistake, not a wish.
MAX_TIMEOUT_MS = 60_000
#: A ``time_boxed`` recall given neither budget stops after this long.
TIME_BOXED_TIMEOUT_MS = 5_000
#: The largest ``budget_tokens`` a recall (or a context) may ask for: a large model's whole
#: window.
MAX_BUDGET_TOKENS = 200_000
# An open end of ``time_range`` (None) stands for these bounds of ``created_at`` (ms).
_TIME_MIN, _TIME_MAX = 0, 1 << 62


def json_number(v: Any) -> Any:
    """A request's number field takes a JSON number only (a ``mode="before"`` validator):
    pydantic's lax mode would take ``true`` or ``"5"``, which the schema does not allow
    (``5.0`` stays an integer, as JSON Schema has it)."""
    if isinstance(v, bool | str):
        raise ValueError("must be a JSON number")
    return v

#: What the library's validation checks, said in the JSON schema (the OpenAPI) too.
def _tags_schema(schema: dict[str, Any]) -> None:
    """Tags an entry can carry; repeating one is harmless (a set), so not refused."""
    schema.pop("uniqueItems", None)
    schema["items"] = {"type": "string", "pattern": TAG_PATTERN}


_NAMES_SCHEMA: dict[str, Any] = {"minItems": 1, "items": {"type": "string", "minLength": 1}}
_UNIT_SCHEMA: dict[str, Any] = {"minimum": 0, "maximum": 1}


class TagFilter(BaseModel):
    """Tag pre-filter: every tag of ``all_of``, at least one of ``any_of`` (when non-empty),
    none of ``none_of``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    all_of: frozenset[str] = Field(default=frozenset(), json_schema_extra=_tags_schema)
    any_of: frozenset[str] = Field(default=frozenset(), json_schema_extra=_tags_schema)
    none_of: frozenset[str] = Field(default=frozenset(), json_schema_extra=_tags_schema)

    @field_validator("all_of", "any_of", "none_of")
    @classmethod
    def _tags(cls, v: frozenset[str]) -> frozenset[str]:
        """Tags a filter names must be tags an entry can carry (as the schema says)."""
        for t in v:
            validate_tag(t)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> TagFilter:
        both = self.all_of & self.none_of
        if both:
            raise ValueError(
                f"contradictory tag filter: {sorted(both)} in both all_of and none_of"
            )
        if self.any_of and self.any_of <= self.none_of:
            raise ValueError(
                f"contradictory tag filter: every any_of tag {sorted(self.any_of)} "
                "is also in none_of, so nothing can match"
            )
        return self

    @property
    def empty(self) -> bool:
        return not (self.all_of or self.any_of or self.none_of)

    def matches(self, tags: Iterable[str]) -> bool:
        """Whether an entry with ``tags`` passes the filter."""
        ts = tags if isinstance(tags, frozenset | set) else frozenset(tags)
        if not self.all_of <= ts:
            return False
        if self.any_of and self.any_of.isdisjoint(ts):
            return False
        return self.none_of.isdisjoint(ts)


def _lens_schema(schema: dict[str, Any]) -> None:
    """The lenses registered when the schema is made: ``name`` or ``name:argument``."""
    names = "|".join(re.escape(n) for n in known_lenses())
    schema["pattern"] = f"^({names})(:.*)?$"


class MemoryQuery(BaseModel):
    """A recall request.

    ``time_range`` is ``(start_ms, end_ms)`` inclusive on ``created_at`` (either end may be
    None: open); ``key_pattern`` is a glob on the entry key (entries without a key never
    match); ``min_strength`` applies to the current (decayed) strength. ``scopes`` and
    ``levels`` (level names or scope suffixes) narrow the readable scopes searched.
    ``order="newest"``: no ranking, the entries matching the filters newest first, read
    from the scopes' indexes (no text, no ``min_strength``). ``fusion`` picks convex
    combination (weight ``alpha`` on dense, ``None``: the engine default) or reciprocal-rank
    fusion; ``mmr`` is the MMR lambda in [0, 1] (``None``: no diversification). ``lens``
    names a preset (see :mod:`retrieval.lens`) that fills the fields left unset.
    ``collapse`` (default on): each fact once -- a memory and the entries derived from it
    (copies, summaries, beliefs, episodes, team copies) come back as one hit, the others
    in its ``also_in`` (:mod:`retrieval.collapse`); off: every form, as ranked.
    ``consistency="semantic"`` waits until the searched scopes are embedded (see
    :data:`Consistency`). ``utility`` (a weight in [0, 1], the ``useful`` lens sets 0.5)
    reorders hits by how often they helped the agents that gave feedback
    (:mod:`retrieval.utility`; off by default). ``context``: a
    :class:`~retrieval.goal.RetrievalContext` whose ``goal`` is searched too and blended in
    (:mod:`retrieval.goal`).

    ``intent`` picks the route (:data:`Intent`, :mod:`retrieval.routes`); ``timeout_ms``
    and ``budget_tokens`` bound any intent when given (``time_boxed`` without a timeout:
    :data:`TIME_BOXED_TIMEOUT_MS`): the recall returns by then, and within that many
    tokens of hit text, with what it has, marked partial (``RecallHits.route``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str | None = None
    tag_filter: TagFilter = Field(default_factory=TagFilter)
    time_range: tuple[int, int] | None = None
    key_pattern: str | None = Field(default=None, json_schema_extra={"minLength": 1})
    # json_schema_extra: what the validators below check, said in the JSON schema too
    min_strength: float | None = Field(default=None, json_schema_extra={"minimum": 0})
    scopes: list[str] | None = Field(default=None, json_schema_extra=_NAMES_SCHEMA)
    levels: list[str] | None = Field(default=None, json_schema_extra=_NAMES_SCHEMA)
    max_results: int = Field(default=10, json_schema_extra={"minimum": 1})
    lens: str | None = Field(default=None, json_schema_extra=_lens_schema)
    explain: bool = Field(default=False, strict=True)
    fusion: FusionMethod = "convex"
    alpha: float | None = Field(default=None, json_schema_extra=_UNIT_SCHEMA)
    mmr: float | None = Field(default=None, json_schema_extra=_UNIT_SCHEMA)
    order: RecallOrder = "relevance"
    # Current truth (retrieval.truth): beliefs as they stood at ``as_of`` (valid time; naive
    # means UTC; never in the future); ``include_history``: replaced versions too.
    as_of: datetime | None = None
    include_history: bool = Field(default=False, strict=True)
    collapse: bool = Field(default=True, strict=True)
    consistency: Consistency = "immediate"
    utility: float | None = Field(default=None, json_schema_extra=_UNIT_SCHEMA)
    context: RetrievalContext | None = None
    intent: Intent = "answer"
    timeout_ms: int | None = Field(default=None, json_schema_extra={
        "minimum": 1, "maximum": MAX_TIMEOUT_MS})
    budget_tokens: int | None = Field(default=None, json_schema_extra={
        "minimum": 1, "maximum": MAX_BUDGET_TOKENS})

    @model_validator(mode="before")
    @classmethod
    def _apply_lens(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("lens"):
            return data
        preset = resolve_lens(str(data["lens"]))
        out = dict(data)
        _fill(out, "query", preset.query)
        out["tag_filter"] = _lens_tags(out.get("tag_filter"), preset)
        _fill(out, "levels", list(preset.levels) if preset.levels is not None else None)
        _fill(out, "min_strength", preset.min_strength)
        if "max_results" not in out and preset.max_results is not None:
            out["max_results"] = preset.max_results
        _fill(out, "alpha", preset.alpha)
        _fill(out, "utility", preset.utility)
        return out

    @field_validator("query")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        if v is None:
            return None
        try:
            # A lone surrogate (JSON "\ud800", or argv bytes that are not UTF-8) would
            # reach the tokenizer and the embedder as their own TypeError, not a clear one.
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("query is not valid Unicode (lone surrogate, or bytes that "
                             "are not UTF-8)") from None
        v = v.strip()
        return v or None

    @field_validator("key_pattern")
    @classmethod
    def _glob(cls, v: str | None) -> str | None:
        if v is not None and not v:
            raise ValueError("key_pattern must be a non-empty glob")
        return v

    _numbers = field_validator("min_strength", "max_results", "alpha", "mmr", "utility",
                               "timeout_ms", "budget_tokens", mode="before")(json_number)

    @field_validator("timeout_ms")
    @classmethod
    def _timeout(cls, v: int | None) -> int | None:
        if v is not None and not 1 <= v <= MAX_TIMEOUT_MS:
            raise ValueError(f"timeout_ms must be between 1 and {MAX_TIMEOUT_MS} (got {v})")
        return v

    @field_validator("budget_tokens")
    @classmethod
    def _budget(cls, v: int | None) -> int | None:
        if v is not None and not 1 <= v <= MAX_BUDGET_TOKENS:
            raise ValueError(f"budget_tokens must be between 1 and {MAX_BUDGET_TOKENS} "
                             f"(got {v})")
        return v

    @field_validator("max_results")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"max_results must be a positive integer (got {v})")
        return v

    @field_validator("time_range", mode="before")
    @classmethod
    def _open_ends(cls, v: Any) -> Any:
        if isinstance(v, tuple | list) and len(v) == 2:
            return (_TIME_MIN if v[0] is None else v[0], _TIME_MAX if v[1] is None else v[1])
        return v

    @field_validator("time_range")
    @classmethod
    def _ordered(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and v[0] > v[1]:
            raise ValueError(f"time_range start {v[0]} is after its end {v[1]}")
        return v

    @field_validator("min_strength")
    @classmethod
    def _strength(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise ValueError(f"min_strength must be >= 0 (got {v})")
        return v

    @field_validator("alpha", "mmr", "utility")
    @classmethod
    def _unit(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError(f"must be in [0, 1] (got {v})")
        return v

    _as_of_text = field_validator("as_of", mode="before")(lambda v: instant_input(v))
    _as_of = field_validator("as_of")(lambda v: None if v is None else past_instant(v))

    @field_validator("scopes", "levels")
    @classmethod
    def _nonempty_list(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or any(not s for s in v)):
            raise ValueError("must be None or a non-empty list of non-empty names")
        return v

    @model_validator(mode="after")
    def _listing(self) -> MemoryQuery:
        if self.order == "newest" and self.query is not None:
            raise ValueError("order='newest' lists entries by time: it takes no query text")
        if self.order == "newest" and self.min_strength is not None:
            raise ValueError("min_strength needs order='relevance' (strength is a ranking "
                             "input; order='newest' reads the indexes only)")
        if self.order == "newest" and (self.utility or self.context is not None):
            raise ValueError("utility and context rank hits: each needs order='relevance'")
        return self._routed()

    def _routed(self) -> MemoryQuery:
        """What an intent needs of the other fields."""
        routed = (self.intent != "answer" or self.timeout_ms is not None
                  or self.budget_tokens is not None)
        if self.order == "newest" and routed:
            raise ValueError("order='newest' lists the scopes' Redis indexes: intent, "
                             "timeout_ms and budget_tokens need order='relevance'")
        if self.intent in ("locate", "explore") and self.query is None:
            raise ValueError(f"intent={self.intent!r} searches words: give query text "
                             "(or intent='answer' to rank by the filters alone)")
        if self.intent == "time_boxed" and self.consistency == "semantic":
            raise ValueError("intent='time_boxed' returns what it has by its budget; "
                             "consistency='semantic' waits for every vector: choose one")
        return self

    @property
    def deadline_ms(self) -> int | None:
        """How long the recall may take: ``timeout_ms``; a ``time_boxed`` one without it
        :data:`TIME_BOXED_TIMEOUT_MS` (None: unbounded)."""
        if self.timeout_ms is None and self.intent == "time_boxed":
            return TIME_BOXED_TIMEOUT_MS
        return self.timeout_ms

    @property
    def has_semantic(self) -> bool:
        """Whether there is text to rank by (dense and BM25)."""
        return self.query is not None

    @property
    def has_logical(self) -> bool:
        """Whether any hard filter is set."""
        return bool(
            not self.tag_filter.empty
            or self.time_range is not None
            or self.key_pattern is not None
            or self.min_strength is not None
        )


#: An instant as text: an RFC 3339 date-time (the offset optional: naive means UTC).
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?")


def instant_input(v: Any) -> Any:
    """Before parsing an ``as_of``: a datetime as is, text only as a date-time (not a date
    alone, not a number of seconds: what the schema's ``date-time`` format says)."""
    if v is None or isinstance(v, datetime):
        return v
    if isinstance(v, str) and _DATE_TIME.fullmatch(v.strip()):
        return v.strip()
    raise ValueError("not a valid datetime: expected ISO 8601 YYYY-MM-DDTHH:MM:SS[+HH:MM], "
                     f"got {str(v)[:40]!r}")


def past_instant(v: datetime) -> datetime:
    """``v`` (naive: UTC) as an aware datetime; an instant in the future is refused: what
    was believed then is not known yet."""
    v = v if v.tzinfo is not None else v.replace(tzinfo=UTC)
    if v > datetime.now(UTC):
        raise ValueError(f"as_of {v.isoformat()} is in the future")
    return v


def as_query(query: MemoryQuery | str | Any, limit: int | None = None,
             explain: bool = False) -> MemoryQuery:
    """``query`` as a :class:`MemoryQuery` (text becomes its ``query``); ``limit`` sets
    ``max_results``, ``explain`` the explain flag."""
    update: dict[str, Any] = {}
    if limit is not None:
        update["max_results"] = limit
    if explain:
        update["explain"] = True
    if not isinstance(query, MemoryQuery):
        return MemoryQuery(query=str(query), **update)  # one validation, on every recall
    q = query
    if not update:
        return q
    # model_validate (not model_copy) so the new values are validated too
    return MemoryQuery.model_validate({**q.model_dump(exclude={"lens"}), **update})


def _fill(out: dict[str, Any], name: str, lens_value: Any) -> None:
    """Give ``out[name]`` the lens's value when the caller left it unset (None)."""
    if out.get(name) is None and lens_value is not None:
        out[name] = lens_value


def _lens_tags(given: Any, preset: LensPreset) -> dict[str, Any]:
    """The caller's tag filter (a TagFilter, a mapping or None) with each part it leaves
    empty taken from the lens."""
    tf = (
        given.model_dump()
        if isinstance(given, TagFilter)
        else dict(given) if given is not None else {}
    )
    return {
        "all_of": tf.get("all_of") or preset.all_of,
        "any_of": tf.get("any_of") or preset.any_of,
        "none_of": tf.get("none_of") or preset.none_of,
    }
