"""The one error tree (every error a caller can catch is a BlackboardError, drawn in
:mod:`blackboard.errors`' docstring) and Redis's errors translated into it, on a real Redis."""

from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
from collections.abc import AsyncIterator, Iterator

import pytest
import redis

import blackboard.errors
from blackboard import Blackboard
from blackboard.acl import AclAdmin
from blackboard.errors import (
    AccessDenied,
    BlackboardError,
    LoginRefused,
    OutOfMemory,
    ServerUnavailable,
)
from blackboard.server import RedisServer
from blackboard.settings import ClientSettings

#: Every package whose errors a caller can catch (``cli`` once it exists).
_PACKAGES = ("blackboard", "retrieval", "memory", "consolidation", "workers", "gateway", "cli")

_TREE_LINE = re.compile(r"^(?P<indent>[│├└─ ]*)(?:(?P<module>[a-z_.]+): )?(?P<name>[A-Z]\w*)"
                        r"(?: \((?P<builtins>[A-Za-z, ]+)\))?")


def _modules() -> Iterator[object]:
    for name in _PACKAGES:
        try:
            pkg = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # not created yet
            raise
        yield pkg
        for info in pkgutil.walk_packages(pkg.__path__, f"{name}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                yield importlib.import_module(info.name)


def _public_exceptions() -> set[type[BaseException]]:
    out: set[type[BaseException]] = set()
    for mod in _modules():
        for attr, value in vars(mod).items():
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and value.__module__ == getattr(mod, "__name__", None)
                    and not attr.startswith("_")):
                out.add(value)
    return out


def _drawn_tree() -> dict[tuple[str, str], tuple[str, str] | None]:
    """(module, name) -> its parent's, from the docstring's tree; checks the builtins."""
    doc = blackboard.errors.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    parents: list[tuple[str, str]] = []
    out: dict[tuple[str, str], tuple[str, str] | None] = {}
    for line in block.splitlines():
        m = _TREE_LINE.match(line.removeprefix("    "))
        assert m, f"not a tree line: {line!r}"
        depth = len(m["indent"]) // 4
        node = (m["module"] or "blackboard.errors", m["name"])
        del parents[depth:]
        out[node] = parents[-1] if parents else None
        parents.append(node)
        cls = getattr(importlib.import_module(node[0]), node[1])
        for b in filter(None, (m["builtins"] or "").replace(" ", "").split(",")):
            assert issubclass(cls, getattr(builtins, b)), (node, b)
    return out


def test_every_public_error_is_a_blackboard_error() -> None:
    stray = sorted(f"{c.__module__}.{c.__qualname__}" for c in _public_exceptions()
                   if not issubclass(c, BlackboardError))
    assert stray == []


def test_the_docstring_draws_the_whole_tree_as_it_is() -> None:
    drawn = _drawn_tree()
    real: set[tuple[str, str]] = set()
    todo: list[type[BlackboardError]] = [BlackboardError]
    while todo:
        t = todo.pop()
        real.add((t.__module__, t.__name__))
        todo += t.__subclasses__()
    assert set(drawn) == real
    for (module, name), parent in drawn.items():
        cls = getattr(importlib.import_module(module), name)
        if parent is not None:  # drawn under its own base
            assert getattr(importlib.import_module(parent[0]), parent[1]) in cls.__bases__
    assert set(blackboard.errors.__all__) == {n for m, n in drawn if m == "blackboard.errors"}


def test_no_two_errors_share_a_name() -> None:
    # The remote client maps an answer's error name back to its type.
    names = [n for _, n in _drawn_tree()]
    assert len(names) == len(set(names))


# -- translation, on a real Redis ---------------------------------------------------------


async def test_acl_refusal_is_access_denied_by_the_server(bb: Blackboard, redis_url: str) -> None:
    admin = AclAdmin(bb)
    g = await admin.grant("a", (), rotate=True)
    other = bb.scope("agent:b:working")
    await other.write({"secret": "b"})
    a = await Blackboard.connect(redis_url, username=g.username, password=g.password)
    try:
        theirs = a.scope("agent:b:working")
        with pytest.raises(AccessDenied) as direct:  # a plain command (NOPERM)
            await theirs.policy()
        with pytest.raises(AccessDenied) as script:  # refused inside a script
            await theirs.write({"x": 1})
        with pytest.raises(AccessDenied) as piped:  # an error reply in a pipeline
            await theirs.write_many([{"x": 1}])
        for refused in (direct, script, piped):
            assert refused.value.by_server, refused.value
            assert isinstance(refused.value, PermissionError)
        assert "no permissions" in str(direct.value).lower()  # 8.2 writes "No permissions"
        assert direct.value.redis_message is not None
        assert "Redis refused the operation" in str(script.value)
    finally:
        await a.close()
        await admin.revoke("a")
    assert await other.count() == 1  # nothing written


async def test_refused_login_is_login_refused(bb: Blackboard, redis_url: str) -> None:
    g = await AclAdmin(bb).grant("a", (), rotate=True)
    try:
        with pytest.raises(LoginRefused) as refused:
            await Blackboard.connect(redis_url, username=g.username, password="wrong")
        assert isinstance(refused.value, ServerUnavailable)
        assert refused.value.redis_message is not None
    finally:
        await AclAdmin(bb).revoke("a")


@pytest.fixture()
def own_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture()
async def own_bb(own_server: RedisServer) -> AsyncIterator[Blackboard]:
    settings = ClientSettings(retries=1, connect_timeout=1.0, socket_timeout=2.0)
    async with Blackboard.connect(own_server.url, settings=settings) as board:
        yield board


@pytest.mark.redis  # own_server: a redis-server of its own (tests/tiers.py)
async def test_killed_server_is_server_unavailable(own_server: RedisServer,
                                                   own_bb: Blackboard) -> None:
    s = own_bb.scope("s")
    await s.write({"x": 1})
    own_server.kill()
    with pytest.raises(ServerUnavailable) as script:
        await s.write({"x": 2})
    with pytest.raises(ServerUnavailable) as direct:
        await s.count()
    for down in (script, direct):
        assert not isinstance(down.value, LoginRefused)
        assert down.value.redis_message is not None  # Redis's client's own words
        assert isinstance(down.value, ConnectionError)


@pytest.mark.redis
async def test_out_of_memory_is_out_of_memory_and_writes_nothing(
        own_server: RedisServer, own_bb: Blackboard) -> None:
    s = own_bb.scope("s")
    await s.write({"x": 1})
    raw = redis.Redis.from_url(own_server.url)
    try:
        raw.config_set("maxmemory-policy", "noeviction")
        before = {k: raw.dump(k) for k in raw.scan_iter()}
        raw.config_set("maxmemory", 1)
        try:
            with pytest.raises(OutOfMemory) as script:
                await s.write({"x": 2})
            with pytest.raises(OutOfMemory) as direct:
                await own_bb.bus(0).ensure_group("role")  # XGROUP CREATE MKSTREAM
            after = {k: raw.dump(k) for k in raw.scan_iter()}
        finally:
            raw.config_set("maxmemory", 0)
    finally:
        raw.close()
    assert after == before
    for oom in (script, direct):
        assert "OOM" in (oom.value.redis_message or "") or "maxmemory" in str(oom.value)
