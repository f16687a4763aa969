"""Malformed input raises the documented error before anything reaches Redis (hypothesis).

Every example compares a DUMP snapshot of every key before and after the call, so a
rejected call that wrote anything at all fails.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackboard import (
    Blackboard,
    EntryTooLarge,
    InvalidArgument,
    InvalidKey,
    InvalidMetadata,
    InvalidScope,
    InvalidTag,
    InvalidValue,
    ScopePolicy,
    WriteRequest,
)
from blackboard.validation import MAX_DEPTH, MAX_KEY_LEN, MAX_SCOPE_LEN, MAX_TAG_LEN, MAX_TAGS

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SCOPE = "agent:a1:working"
LIMIT = 4096  # the client's max_entry_bytes in these tests


class Harness:
    """One event loop and blackboard for all examples of a test (hypothesis runs them sync)."""

    def __init__(self, url: str, r: redis.Redis, snap: Callable[[redis.Redis], Any]) -> None:
        self.loop = asyncio.new_event_loop()
        self.r = r
        self.snap = snap
        from blackboard import ClientSettings

        self.bb: Blackboard = self.run(
            Blackboard.connect(url, settings=ClientSettings(partitions=8, max_entry_bytes=LIMIT))
        )
        self.scope = self.bb.scope(SCOPE)
        self.seed = self.run(self.scope.write("seed", tags={"t"}, key="k", ttl=3600))

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def rejects(self, exc: type[Exception], call: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        before = self.snap(self.r)
        with pytest.raises(exc):
            self.run(call())
        assert self.snap(self.r) == before

    def close(self) -> None:
        self.run(self.bb.close())
        self.loop.close()


@pytest.fixture()
def h(clean_redis: redis.Redis, redis_url: str, snapshot_of: Any) -> Iterator[Harness]:
    harness = Harness(redis_url, clean_redis, snapshot_of)
    yield harness
    harness.close()


# -- strategies of malformed input -------------------------------------------------------

lone_surrogate = st.sampled_from(["\ud800", "\udfff", "a\udc80b"])
bad_chars = st.sampled_from(list(" \t\n\r\x00\x1f\x7f{}*?[]\\"))

bad_scope = st.one_of(
    st.just(""),
    st.text(min_size=MAX_SCOPE_LEN + 1, max_size=MAX_SCOPE_LEN + 5, alphabet="ab"),
    st.builds(
        lambda a, c, b: a + c + b,
        st.text("abc:", max_size=5),
        st.one_of(bad_chars, st.sampled_from(["/", "é", "#", "@"])),
        st.text("abc", max_size=5),
    ),
    st.sampled_from([":a", "a:", "a::b", "a:b:", "{p1}", "agent:*"]),
    st.one_of(st.none(), st.integers(), st.binary(min_size=1)),
)

bad_tag = st.one_of(
    st.just(""),
    st.text(min_size=MAX_TAG_LEN + 1, max_size=MAX_TAG_LEN + 3, alphabet="x"),
    st.builds(
        lambda a, c, b: a + c + b, st.text("ab:", max_size=4), bad_chars, st.text("ab", max_size=4)
    ),
    st.builds(lambda a, s: a + s, st.text("ab", max_size=3), lone_surrogate),
    st.one_of(st.integers(), st.none(), st.binary()),
)
bad_tags = st.one_of(
    st.builds(
        lambda ok, bad: [*ok, bad], st.lists(st.sampled_from(["a", "b:c"]), max_size=3), bad_tag
    ),
    st.just("single-string"),
    st.just([f"t{i}" for i in range(MAX_TAGS + 1)]),
)

bad_key = st.one_of(
    st.just(""),
    st.text(min_size=MAX_KEY_LEN + 1, max_size=MAX_KEY_LEN + 2, alphabet="k"),
    st.builds(
        lambda a, c: a + c,
        st.text("ab", max_size=4),
        st.sampled_from(["\x00", "\n", "\x1b", "\x7f"]),
    ),
    st.builds(lambda a, s: a + s, st.text("ab", max_size=3), lone_surrogate),
    st.one_of(st.integers(), st.binary()),
)


def _nest(depth: int) -> Any:
    v: Any = 1
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


class NotJSON:
    pass


bad_leaf = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.sets(st.integers(), max_size=2),
    st.binary(max_size=3),
    st.builds(NotJSON),
    st.builds(lambda a, s: a + s, st.text(max_size=3), lone_surrogate),
    st.just(_nest(MAX_DEPTH + 1)),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
)
# A malformed leaf somewhere inside otherwise fine JSON.
bad_value = st.recursive(
    bad_leaf,
    lambda inner: st.one_of(
        st.builds(lambda ok, b: [*ok, b], st.lists(st.integers(), max_size=2), inner),
        st.builds(lambda b: {"ok": 1, "x": b}, inner),
    ),
    max_leaves=3,
)
bad_metadata = st.one_of(
    st.builds(lambda v: {"m": v}, bad_value),
    st.sampled_from([[1, 2], "text", 3]),
    st.builds(lambda k: {k: 1}, st.one_of(st.integers(), st.none(), st.tuples(st.integers()))),
)
bad_ttl = st.one_of(
    st.floats(max_value=0),
    st.integers(max_value=0),
    st.sampled_from([math.nan, math.inf, True]),
    st.just(11 * 365 * 86400),
    st.text(max_size=3),
)
bad_importance = st.one_of(
    st.floats(max_value=-1e-9, allow_nan=False),
    st.floats(min_value=1.000001, allow_nan=False),
    st.sampled_from([math.nan, True, False, "0.5", None]),
)


# -- tests -------------------------------------------------------------------------------


@SETTINGS
@given(scope_id=bad_scope)
def test_bad_scope_ids(h: Harness, scope_id: Any) -> None:
    before = h.snap(h.r)
    with pytest.raises(InvalidScope):
        h.bb.scope(scope_id)
    with pytest.raises(InvalidScope):
        h.bb.scope_keys(scope_id)
    assert h.snap(h.r) == before


@SETTINGS
@given(tags=bad_tags)
def test_bad_tags(h: Harness, tags: Any) -> None:
    s = h.scope
    h.rejects(InvalidTag, lambda: s.write("v", tags=tags))
    h.rejects(InvalidTag, lambda: s.write_many([WriteRequest(1), WriteRequest("v", tags=tags)]))
    h.rejects(InvalidTag, lambda: s.update(h.seed.id, tags=tags))
    h.rejects(InvalidTag, lambda: s.entries(all_of=tags))


@SETTINGS
@given(key=bad_key)
def test_bad_keys(h: Harness, key: Any) -> None:
    s = h.scope
    h.rejects(InvalidKey, lambda: s.write("v", key=key))
    h.rejects(InvalidKey, lambda: s.write_many([WriteRequest(1), WriteRequest(2, key=key)]))
    h.rejects(InvalidKey, lambda: s.get_by_key(key))


@SETTINGS
@given(value=bad_value)
def test_bad_values(h: Harness, value: Any) -> None:
    s = h.scope
    h.rejects(InvalidValue, lambda: s.write(value, tags={"x"}))
    h.rejects(InvalidValue, lambda: s.write_many([WriteRequest(1), WriteRequest(value)]))
    h.rejects(InvalidValue, lambda: s.update(h.seed.id, value=value))


@SETTINGS
@given(metadata=bad_metadata)
def test_bad_metadata(h: Harness, metadata: Any) -> None:
    s = h.scope
    h.rejects(InvalidMetadata, lambda: s.write("v", metadata=metadata))
    h.rejects(
        InvalidMetadata, lambda: s.write_many([WriteRequest(1), WriteRequest(2, metadata=metadata)])
    )
    h.rejects(InvalidMetadata, lambda: s.update(h.seed.id, metadata=metadata))


@SETTINGS
@given(size=st.integers(min_value=LIMIT - 1, max_value=LIMIT * 4), split=st.floats(0, 1))
def test_oversized_entries(h: Harness, size: int, split: float) -> None:
    # value JSON is size + 2 bytes ('"..."'), metadata at least '{}' (2): always over LIMIT.
    n_meta = int(size * split)
    value, metadata = "v" * (size - n_meta), {"m": "é" * (n_meta // 2)}
    s = h.scope
    h.rejects(EntryTooLarge, lambda: s.write(value, metadata=metadata))
    h.rejects(
        EntryTooLarge,
        lambda: s.write_many([WriteRequest(1), WriteRequest(value, metadata=metadata)]),
    )
    if len(value) + 2 > LIMIT:
        h.rejects(EntryTooLarge, lambda: s.update(h.seed.id, value=value))


@SETTINGS
@given(
    ttl=bad_ttl, importance=bad_importance, which=st.sampled_from(["ttl", "importance", "strength"])
)
def test_bad_numbers(h: Harness, ttl: Any, importance: Any, which: str) -> None:
    s = h.scope
    if which == "strength" and importance is None:
        importance = -1.0  # strength=None is documented as "the default, 1.0"
    kw = {"ttl": ttl} if which == "ttl" else {which: importance}
    h.rejects(InvalidArgument, lambda: s.write("v", **kw))
    h.rejects(InvalidArgument, lambda: s.write_many([WriteRequest(1), WriteRequest(2, **kw)]))
    if which != "strength":
        h.rejects(InvalidArgument, lambda: s.update(h.seed.id, **kw))


@SETTINGS
@given(
    entry_id=st.one_of(
        st.just(""),
        st.text(min_size=65, max_size=66, alphabet="a"),
        st.sampled_from(["a b", "a:b", "ü", "x{y}"]),
    ),
    where=st.sampled_from(["write", "source", "get", "update", "delete", "reinforce", "op_id"]),
)
def test_bad_entry_ids(h: Harness, entry_id: str, where: str) -> None:
    s = h.scope
    calls = {
        "write": lambda: s.write("v", entry_id=entry_id),
        "source": lambda: s.write("v", source=[entry_id]),
        "get": lambda: s.get(entry_id),
        "update": lambda: s.update(entry_id, value=1),
        "delete": lambda: s.delete(entry_id),
        "reinforce": lambda: s.reinforce(entry_id),
        "op_id": lambda: s.update(h.seed.id, value=1, op_id=entry_id),
    }
    h.rejects(InvalidArgument, calls[where])


def test_other_argument_errors(h: Harness) -> None:
    s = h.scope
    h.rejects(InvalidArgument, lambda: s.write("v", embedding=b"abc", embedder="e"))
    h.rejects(InvalidArgument, lambda: s.write("v", embedding=b"abcd"))  # no embedder name
    h.rejects(InvalidArgument, lambda: s.update(h.seed.id, value=1, expected_version="1"))  # type: ignore[arg-type]
    h.rejects(InvalidArgument, lambda: s.reinforce(h.seed.id, boost=2.0))
    for bad in (dict(max_entries=-1), dict(on_full="drop"), dict(decay_rate=1.0), dict(ttl=0)):
        with pytest.raises(InvalidArgument):
            ScopePolicy(**bad)  # type: ignore[arg-type]


# -- and what is valid goes through unchanged ------------------------------------------

json_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
good_tag = st.text(
    st.characters(
        blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="{}*?[]\\\x85\xa0"
    ),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=json_value,
    metadata=st.dictionaries(st.text(max_size=8), json_value, max_size=3),
    tags=st.sets(good_tag, max_size=5),
    key=st.one_of(
        st.none(),
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30),
    ),
)
def test_valid_input_round_trips(
    h: Harness, value: Any, metadata: Any, tags: set[str], key: str | None
) -> None:
    e = h.run(h.scope.write(value, metadata=metadata, tags=tags, key=key))
    got = h.run(h.scope.get(e.id))
    assert got.value == value and got.metadata == metadata and got.tags == tags
    assert got.key == key
    if key is not None:
        assert h.run(h.scope.get_by_key(key)).id == e.id


# -- scope ids cannot collide with another scope's keys ------------------------------------

# Segments and tags drawn from the words that make up key suffixes, so generated scopes do
# try ``S:e:<id>`` and ``S:tag:<t>``; the reserved words must be refused for that to hold.
_WORDS = ["a", "b", "e", "tag", "ix", "tags", "keys", "exp", "evict", "feed", "cfg", "s"]
_segment = st.one_of(st.sampled_from(_WORDS), st.text("abetgix_.-", min_size=1, max_size=4))
_scope_like = st.lists(_segment, min_size=1, max_size=5).map(":".join)
_tag_like = st.one_of(st.lists(_segment, min_size=1, max_size=4).map(":".join), good_tag)
_id_like = st.one_of(st.sampled_from(_WORDS), st.from_regex(r"[0-9A-Za-z_-]{1,8}", fullmatch=True))


def _valid(check: Callable[[Any], Any], value: Any) -> bool:
    try:
        check(value)
    except InvalidArgument:
        return False
    return True


def _keys_of(scope: str, tags: set[str], ids: set[str]) -> dict[str, tuple[str, str]]:
    """Every key the scope owns (in partition 0: the worst case, all scopes share it)."""
    from blackboard.keys import PartitionKeys, ScopeKeys

    sk = ScopeKeys(scope, 0)
    out = {k: (scope, name) for name, k in [
        ("ix", sk.ix), ("tags", sk.tags), ("keys", sk.keys), ("exp", sk.exp),
        ("evict", sk.evict), ("feed", sk.feed), ("cfg", sk.cfg),
    ]}
    out |= {sk.entry(i): (scope, f"entry {i}") for i in ids}
    out |= {sk.tag_set(t): (scope, f"tag {t}") for t in tags}
    part = PartitionKeys(0)
    shared = [part.bus, part.dlq, part.scopes, part.ttl, part.prune, part.pendings,
              part.inflight, part.inbox, part.relaying, part.retired, part.flowmark,
              part.edges_version]
    assert not out.keys() & set(shared), (scope, out.keys() & set(shared))
    return out


def _assert_injective(scopes: Iterable[str], tags: Iterable[str], ids: Iterable[str]) -> int:
    from blackboard.ids import is_entry_id
    from blackboard.validation import validate_scope, validate_tag

    good_tags = {t for t in tags if _valid(validate_tag, t)}
    good_ids = {i for i in ids if is_entry_id(i)}
    owner: dict[str, tuple[str, str]] = {}
    for scope in {s for s in scopes if _valid(validate_scope, s)}:
        for key, what in _keys_of(scope, good_tags, good_ids).items():
            assert owner.setdefault(key, what) == what, f"{key}: {owner[key]} and {what}"
    return len(owner)


def test_no_two_valid_scopes_share_a_key_exhaustively() -> None:
    """Every scope of up to 4 segments, every tag of up to 3 and every entry id drawn from
    the words key suffixes are made of: each key has one owner."""
    words = ["a", "e", "tag", "ix", "feed"]
    joins = [":".join(p) for n in range(1, 5) for p in itertools.product(words, repeat=n)]
    assert _assert_injective(joins, [j for j in joins if j.count(":") < 3], words) > 10_000


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_scope_like, min_size=2, max_size=4, unique=True),
       tags=st.sets(_tag_like, max_size=6), ids=st.sets(_id_like, max_size=6))
def test_no_two_valid_scopes_share_a_key(parts: list[str], tags: set[str], ids: set[str]) -> None:
    # Nest the drawn scopes in one another (``S:R``) and make tags of their tails, so the
    # shapes that could collide are drawn, not left to chance.
    scopes = set(parts) | {f"{a}:{b}" for a in parts for b in parts}
    tails = {f"{b}:{w}" for b in parts for w in _WORDS}
    _assert_injective(scopes, tags | tails | set(parts), ids)


def test_the_reserved_segments_are_what_prevents_a_collision() -> None:
    """Without the rule the issue's example collides: so the test above can fail."""
    from blackboard.keys import ScopeKeys
    from blackboard.validation import RESERVED_SEGMENTS, validate_scope

    assert set(RESERVED_SEGMENTS) == {"e", "tag"}
    base, nested = ScopeKeys("agent:x:working", 0), ScopeKeys("agent:x:working:tag:t", 0)
    assert nested.ix == base.tag_set("t:ix")
    assert ScopeKeys("agent:x:working:e", 0).feed == base.entry("feed")
    for bad in ["agent:x:working:tag:t", "agent:x:working:e", "agent:x:e:working", "tag:x",
                "e"]:
        with pytest.raises(InvalidScope, match="reserved"):
            validate_scope(bad)
    for ok in ["agent:x:working", "agent:tag1:e2", "agent:x:E", "agent:x:Tag", "collective"]:
        assert validate_scope(ok) == ok


def test_every_named_scope_is_still_valid() -> None:
    from memory.levels import MemoryLevel
    from memory.naming import COLLECTIVE, agent_scopes, parse_scope, team_scope

    names = [*agent_scopes("a1"), team_scope("t1"), COLLECTIVE,
             *(team_scope("t1", lvl) for lvl in MemoryLevel)]
    for name in names:
        assert parse_scope(name).scope_id == name
    with pytest.raises(InvalidScope):
        agent_scopes("tag")


def test_one_name_rule_for_agents_teams_edges_and_the_schema() -> None:
    """Agent ids and teams become scope segments, so a reserved one is refused (by the
    library, and by the gateway's parameter, whose schema documents the same rule); an edge
    or transformer name only follows the characters."""
    import re

    from blackboard import InvalidArgument
    from blackboard.validation import NAME_PATTERN, is_name, validate_name
    from memory.request_bodies import NAME_SCHEMA

    documented = re.compile(NAME_SCHEMA["pattern"])
    for ok in ["ana", "a.b-c_9", "E", "tags", "n" * 64]:
        assert validate_name(ok, "agent id") == ok and documented.match(ok)
    for bad in ["e", "tag"]:
        assert is_name(bad) and re.match(NAME_PATTERN, bad) and not documented.match(bad)
        with pytest.raises(InvalidArgument, match=f"agent id '{bad}' is reserved"):
            validate_name(bad, "agent id")
    for bad in ["", "a b", "a:b", "n" * 65, None, 3]:
        assert not is_name(bad)
        with pytest.raises(InvalidArgument, match="team must match"):
            validate_name(bad, "team")
        if isinstance(bad, str):
            assert not documented.match(bad) or len(bad) > NAME_SCHEMA["maxLength"]


def test_a_huge_ttl_is_refused_not_overflowed() -> None:
    # found by the OpenAPI fuzz run: 1e308 s * 1000 is infinity, which ceil refused (a 500)
    from blackboard import InvalidArgument
    from blackboard.validation import check_ttl

    with pytest.raises(InvalidArgument, match="ten years"):
        check_ttl(1e308)
