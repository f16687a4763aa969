"""Secure mode for the test servers: the default user password-protected, as `blackboard acl
protect-default` leaves a server. Used by the fixtures of ``tests/conftest.py`` and by the
gateway's; a module of its own so nothing imports a conftest (pytest loads those under
their own names, and a second import would make a second copy of every class in them)."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass

import redis

from blackboard import Blackboard
from blackboard.acl import AclAdmin
from blackboard.acl_check import protect_default

__all__ = ["Secure", "reset_secure", "secure_mode"]


@dataclass(frozen=True)
class Secure:
    """A server (or cluster) in secure mode. ``url`` carries no credentials (redis-py lets
    URL credentials override ``username=``/``password=``, so agents connect with it);
    ``admin_url`` logs in as the protected default user."""

    url: str
    password: str
    ports: tuple[int, ...]

    @property
    def admin_url(self) -> str:
        return self.url.replace("redis://", f"redis://default:{self.password}@", 1)

    def admin_clients(self) -> list[redis.Redis]:
        return [redis.Redis(port=p, username="default", password=self.password)
                for p in self.ports]


def secure_mode(url: str, ports: tuple[int, ...]) -> Secure:
    """Protect the default user of the server (or every node) at ``url`` with a new
    password, as `blackboard acl protect-default` does."""
    password = "bb-test-" + secrets.token_hex(16)

    async def protect() -> None:
        async with Blackboard.connect(url, partitions=8) as board:
            await protect_default(AclAdmin(board), password=password)

    asyncio.run(protect())
    return Secure(url, password, ports)


def reset_secure(secure: Secure) -> None:
    """Empty every node: data, scripts and every user but default."""
    for r in secure.admin_clients():
        try:
            r.flushall()
            r.script_flush()
            for user in r.acl_users():
                if user != "default":
                    r.acl_deluser(user)
        finally:
            r.close()
