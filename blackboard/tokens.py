"""Bearer-token records and their Redis passwords (the gateway's tokens).

A token is one extra password on a Redis ACL user (an agent's, or the service user for
an operator token): a user may hold several, and removing one leaves the others. Redis
checks every login, so a revoked token stops working on its next connection, and
:meth:`TokenStore.revoke` kills the user's open connections so none outlives it (the
other tokens' clients reconnect with their own passwords). The registry hash records
``{id, agent, teams, operator, user, created, sha256}`` per token — never the password:
revocation removes the password by its hash (``ACL SETUSER <user> !<sha256>``).
Needs an admin connection (``ACL SETUSER`` and ``CLIENT KILL`` are admin commands).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .acl import AclAdmin
from .errors import NotFound, ServerError
from .keys import ROOT

__all__ = ["TOKENS", "TokenRecord", "TokenStore"]

#: hash: token id -> JSON record
TOKENS = f"{ROOT}:gateway:tokens"


@dataclass(frozen=True, slots=True)
class TokenRecord:
    id: str
    agent: str
    teams: tuple[str, ...]
    operator: bool
    user: str
    created: int  # ms since the epoch
    sha256: str

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["teams"] = list(self.teams)
        return d

    @classmethod
    def from_json(cls, raw: bytes | str) -> TokenRecord:
        d = json.loads(raw)
        return cls(d["id"], d["agent"], tuple(d["teams"]), bool(d["operator"]), d["user"],
                   int(d["created"]), d["sha256"])


class TokenStore:
    """Token passwords on ACL users and their registry (admin connection ``acl.bb``)."""

    def __init__(self, acl: AclAdmin) -> None:
        self.acl = acl

    async def add(self, token_id: str, agent: str, teams: Sequence[str], operator: bool,
                  user: str, password: str) -> TokenRecord:
        """Add ``password`` to ``user`` (on every node) and record the token."""
        rec = TokenRecord(token_id, agent, tuple(sorted(teams)), operator, user,
                          int(time.time() * 1000),
                          hashlib.sha256(password.encode()).hexdigest())
        for node in self.acl.nodes():
            await self.acl.on_node(node, "ACL", "SETUSER", user, f">{password}")
        await self.acl.save()
        await self.acl.bb.client.hset(TOKENS, token_id, json.dumps(rec.to_json()))
        return rec

    async def list(self) -> list[TokenRecord]:
        raw = await self.acl.bb.client.hgetall(TOKENS)
        return sorted((TokenRecord.from_json(v) for v in raw.values()),
                      key=lambda r: (r.created, r.id))

    async def get(self, token_id: str) -> TokenRecord:
        raw = await self.acl.bb.client.hget(TOKENS, token_id)
        if raw is None:
            raise NotFound(f"no token {token_id!r} (see `blackboard token list`)")
        return TokenRecord.from_json(raw)

    async def revoke(self, token_id: str) -> TokenRecord:
        """Remove the token's password from its user, disconnect the user's clients (they
        re-login; this token's cannot), and drop the record. NotFound if unknown."""
        rec = await self.get(token_id)
        for node in self.acl.nodes():
            # A user already deleted (`acl revoke`) has no password left to remove.
            if await self.acl.on_node(node, "ACL", "GETUSER", rec.user) is not None:
                # The password may be gone already (a retried revoke, a reset user).
                with contextlib.suppress(ServerError):
                    await self.acl.on_node(node, "ACL", "SETUSER", rec.user,
                                           f"!{rec.sha256}")
                await self.acl.on_node(node, "CLIENT", "KILL", "USER", rec.user)
        await self.acl.save()
        await self.acl.bb.client.hdel(TOKENS, token_id)
        return rec
