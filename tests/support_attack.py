"""Helpers of the attack suite (tests/security/test_attack_*.py, issue 12).

Each agent is confined by its own ACL user. The admin side runs in *secure mode* (the
default user password-protected, fixtures ``secure_bb`` / ``secure_cbb`` of
tests/conftest.py) when the tree has it; without it (the code before issue 12) the open
default user is the admin, which is exactly finding 3. Every test tallies its attempts and
prints ``<name>: tries T / refused R / harmed H``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis import exceptions as rexc
from redis_snapshot import Snapshot, snapshot_of

from blackboard import AccessDenied, Blackboard
from blackboard.acl import AclAdmin
from blackboard.keys import PartitionKeys, partition_of


def is_refusal(exc: BaseException) -> bool:
    """Redis refused it on ACL grounds (NOPERM, or an ACL failure inside a script)."""
    if isinstance(exc, rexc.NoPermissionError | AccessDenied):
        return True
    text = str(exc)
    return "NOPERM" in text or "ACL failure" in text or "no permissions" in text.lower()


@dataclass
class Tally:
    name: str
    tries: int = 0
    refused: int = 0
    harmed: int = 0
    escapes: list[str] = field(default_factory=list)

    async def attempt(self, what: str, coro: Awaitable[Any]) -> bool:
        """One attempt that must be refused by Redis; an allowed one counts as harm.
        Returns whether it was refused."""
        self.tries += 1
        try:
            got = await coro
        except Exception as exc:
            if is_refusal(exc):
                self.refused += 1
                return True
            self.escapes.append(f"{what}: not an ACL refusal: {exc!r:.160}")
            self.harmed += 1
            return False
        self.escapes.append(f"{what}: allowed, got {got!r:.120}")
        self.harmed += 1
        return False

    def line(self) -> str:
        s = f"{self.name}: tries {self.tries} / refused {self.refused} / harmed {self.harmed}"
        print(s)
        return s


@dataclass
class AttackEnv:
    """An admin board, a URL agents connect to, the admin's sync clients (one per node),
    and whether the server is in secure mode."""

    admin: Blackboard
    url: str
    admin_url: str
    nodes: list[redis.Redis]
    secure: bool
    opened: list[tuple[str, Blackboard]] = field(default_factory=list)

    async def agent(self, name: str, teams: tuple[str, ...] = ()) -> Blackboard:
        g = await AclAdmin(self.admin).grant(name, teams, rotate=True)
        board = await Blackboard.connect(self.url, partitions=8, username=g.username,
                                         password=g.password)
        self.opened.append((name, board))
        return board

    def snapshot(self) -> Snapshot:
        out: Snapshot = {}
        for r in self.nodes:
            out.update(snapshot_of(r))
        return out

    async def close(self) -> None:
        for name, board in self.opened:
            await board.close()
            with contextlib.suppress(Exception):  # a failed test may have left no user
                await AclAdmin(self.admin).revoke(name)
        for r in self.nodes:
            r.close()


def _secure_or_none(request: pytest.FixtureRequest, name: str) -> Any:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        return None


@pytest.fixture()
def attack_base(request: pytest.FixtureRequest) -> AttackEnv:
    """One Redis (the version the suite runs on), in secure mode when the tree has it.
    (Sync, so it may ask for the admin fixture by name while no event loop runs.)"""
    secure = _secure_or_none(request, "secure_redis")
    if secure is not None:
        admin = request.getfixturevalue("secure_bb")
        env = AttackEnv(admin, secure.url, secure.admin_url, secure.admin_clients(), True)
    else:
        admin = request.getfixturevalue("bb")
        url = request.getfixturevalue("redis_url")
        env = AttackEnv(admin, url, url, [redis.Redis.from_url(url)], False)
    return env


@pytest.fixture()
def attack_cluster_base(request: pytest.FixtureRequest) -> AttackEnv:
    """The 3-master cluster, in secure mode when the tree has it."""
    secure = _secure_or_none(request, "secure_cluster")
    if secure is not None:
        admin = request.getfixturevalue("secure_cbb")
        env = AttackEnv(admin, secure.url, secure.admin_url, secure.admin_clients(), True)
    else:
        admin = request.getfixturevalue("cbb")
        cluster = request.getfixturevalue("cluster")
        env = AttackEnv(admin, cluster.url, cluster.url,
                        [redis.Redis(port=n.port) for n in cluster.nodes], False)
    return env


@pytest.fixture()
async def attack_env(attack_base: AttackEnv) -> AsyncIterator[AttackEnv]:
    yield attack_base
    await attack_base.close()


@pytest.fixture()
async def attack_cluster_env(attack_cluster_base: AttackEnv) -> AsyncIterator[AttackEnv]:
    yield attack_cluster_base
    await attack_cluster_base.close()


def neighbour(of: str, level: str = "working", partitions: int = 8) -> str:
    """An agent id whose ``level`` scope shares a partition with agent ``of``'s: the
    attacker of the partition-wide findings must share its victim's partition."""
    want = partition_of(f"agent:{of}:{level}", partitions)
    return next(a for i in range(1000)
                if partition_of(f"agent:{(a := f'a{i}')}:{level}", partitions) == want)


async def raw(host: str, port: int, *commands: tuple[str, ...]) -> list[bytes]:
    """Send RESP commands on one fresh connection, as a hostile client would; each reply's
    first line (errors are returned, not raised)."""
    reader, writer = await asyncio.open_connection(host, port)
    out: list[bytes] = []
    try:
        for cmd in commands:
            parts = [c.encode() for c in cmd]
            writer.write(b"*%d\r\n" % len(parts)
                         + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
            await writer.drain()
            line = await reader.readline()
            if line.startswith(b"$") and not line.startswith(b"$-1"):
                line = await reader.readline()
                line = line.rstrip(b"\r\n")
            out.append(line.rstrip(b"\r\n"))
    finally:
        writer.close()
    return out


def partition_key(part: PartitionKeys, name: str) -> str:
    """``part.<name>``; on the code before issue 12 (no inbox/relaying yet) the name the
    keys module gives it now, so the same attack runs against both."""
    return str(getattr(part, name, f"{part.base}:{name}"))


@pytest.fixture(params=["single", pytest.param("cluster", marks=pytest.mark.cluster)])
def any_base(request: pytest.FixtureRequest) -> AttackEnv:
    """The same attack on one Redis and on the 3-master cluster."""
    name = "attack_base" if request.param == "single" else "attack_cluster_base"
    env: AttackEnv = request.getfixturevalue(name)
    return env


@pytest.fixture()
async def any_env(any_base: AttackEnv) -> AsyncIterator[AttackEnv]:
    yield any_base
    await any_base.close()
