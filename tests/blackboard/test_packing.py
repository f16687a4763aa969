"""The C command packer gives byte-identical commands and the same errors as redis-py's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from blackboard import Blackboard
from blackboard.packing import with_fast_packing

FAST = with_fast_packing(Connection)
ARG = st.one_of(
    st.text(max_size=20),
    st.binary(max_size=20),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["SET", "CONFIG GET", b"EVALSHA", b"CLIENT SETNAME"]),
    st.lists(ARG, max_size=30),
)
def test_packs_like_redis_py(cmd: str | bytes, args: list[object]) -> None:
    slow, fast = Connection(), FAST()
    assert b"".join(fast.pack_command(cmd, *args)) == b"".join(slow.pack_command(cmd, *args))


@pytest.mark.parametrize("bad", [True, None])
def test_refused_values_raise_redis_py_error(bad: object) -> None:
    with pytest.raises(DataError):
        FAST().pack_command("SET", "k", bad)


def test_bytearray_and_memoryview_are_packed() -> None:
    slow, fast = Connection(), FAST()
    for v in (bytearray(b"ab"), memoryview(b"cd")):
        assert b"".join(fast.pack_command("SET", "k", v)) == b"".join(
            slow.pack_command("SET", "k", v)
        )


async def test_the_board_client_uses_it(bb: Blackboard) -> None:
    assert issubclass(bb.client.connection_pool.connection_class, Connection)
    assert bb.client.connection_pool.connection_class.__name__.startswith("FastPacking")
    await bb.client.set("k", "v")
    assert await bb.client.get("k") == b"v"
