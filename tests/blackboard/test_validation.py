"""Malformed input raises the documented error before anything reaches Redis (hypothesis).

Every example compares a DUMP snapshot of every key before and after the call, so a
rejected call that wrote anything at all fails.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine, Iterator
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
