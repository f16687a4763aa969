"""Who is calling: a token resolved to a Redis connection logged in as the token's user.

Each token carries its Redis username and password (:mod:`gateway.tokens`), so the
gateway holds no secret: :class:`Callers` opens one connection pool per verified
credential -- the (Redis user, password hash) pair Redis accepted -- and every memory
call of the request runs on it, so Redis itself refuses another agent's keys. Only the
user and password are checked (by Redis); the token's id, agent and teams are claims
anyone holding it can edit, so nothing is keyed by them: an edited token with a known
credential finds the pool already open, and the rate bucket is the Redis user's
(:attr:`Caller.principal`). Growth is bounded: at most ``pools_per_user`` pools per
user and ``max_callers`` in all (least recently used closed first), each of at most
``pool_size`` connections. A revoked token's connections are killed by ``token revoke``
and the re-login fails, so the next request gets 401 and its pool is dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, replace

from fastapi import Request

from blackboard import Blackboard
from blackboard.acl import SERVICE_USER
from blackboard.errors import LoginRefused
from memory import AgentMemory
from retrieval import Retriever

from .refusals import Unauthorized
from .settings import GatewaySettings
from .tokens import TokenClaims, parse_token

__all__ = ["LOCAL_AGENT", "Caller", "Callers", "bearer", "resolve_caller"]

#: The agent id of every caller of an ``--insecure-local`` gateway.
LOCAL_AGENT = "local"
#: Seconds an evicted caller's pool stays open for the requests still using it.
RETIRE_S = 30.0

#: Logins in flight at once: a flood of unknown credentials (each a connection attempt
#: that Redis refuses) waits here instead of opening connections without bound.
LOGINS_IN_FLIGHT = 16

#: A verified credential: (Redis user, sha256 of the password).
Credential = tuple[str, str]

#: Tokens whose parse (base64, JSON, the password's sha256: ~20 µs of every request) is
#: remembered; a flood of distinct tokens only pushes the oldest out.
PARSED_TOKENS = 1024


@dataclass
class Caller:
    """One authenticated caller. ``bb`` is logged in as the token's Redis user;
    ``memory`` is the agent's :class:`AgentMemory` on it. ``operator``: the token's user
    is the service user, which may read every scope (map, stats, dashboard). ``token_id``
    and ``teams`` are the claims of the token that opened the pool (Redis confines
    whatever they say)."""

    token_id: str
    agent_id: str
    teams: tuple[str, ...]
    operator: bool
    bb: Blackboard
    memory: AgentMemory
    user: str = ""

    @property
    def principal(self) -> str:
        """What requests are counted under (the rate bucket): the Redis user the login
        verified, never an editable claim of the token."""
        return self.user or self.agent_id

    async def aclose(self) -> None:
        await self.memory.aclose()
        await self.bb.close()


def credential_of(claims: TokenClaims) -> Credential:
    return claims.user, hashlib.sha256(claims.password.encode()).hexdigest()


class Callers:
    """The per-credential connection pools of one gateway process (LRU: ``max_callers``
    in all, ``pools_per_user`` per Redis user)."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self._cache: OrderedDict[Credential, Caller] = OrderedDict()
        self._opening: dict[Credential, asyncio.Future[Caller]] = {}
        self._retiring: dict[asyncio.Task[None], Caller] = {}
        self._logins = asyncio.Semaphore(LOGINS_IN_FLIGHT)
        self._parsed: dict[str, tuple[Credential, TokenClaims]] = {}

    def _key(self, token: str | None) -> tuple[Credential, TokenClaims]:
        if self.settings.insecure_local:
            claims = TokenClaims("local", SERVICE_USER, "", LOCAL_AGENT, (), True)
            return ("local", ""), claims
        if not token:
            raise Unauthorized("no bearer token", token_sent=False)
        got = self._parsed.get(token)
        if got is None:  # parsing is a pure function of the token: Redis checks the login
            claims = parse_token(token)
            got = self._parsed[token] = credential_of(claims), claims
            if len(self._parsed) > PARSED_TOKENS:
                del self._parsed[next(iter(self._parsed))]
        return got

    async def resolve(self, token: str | None) -> Caller:
        """The caller of ``token`` (the raw bearer token); :class:`Unauthorized` when it
        is missing, malformed, revoked or its Redis login is refused."""
        key, claims = self._key(token)
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
            return got
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[Caller] = asyncio.get_running_loop().create_future()
        self._opening[key] = fut
        try:
            async with self._logins:
                caller = await self._open(claims)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._opening.pop(key, None)
        fut.set_result(caller)
        self._cache[key] = caller
        self._evict(key[0])
        return caller

    def _evict(self, user: str) -> None:
        """Close the least recently used pools over the per-user and overall caps."""
        mine = [k for k in self._cache if k[0] == user]
        for k in mine[:max(0, len(mine) - self.settings.pools_per_user)]:
            self._retire(self._cache.pop(k))
        while len(self._cache) > self.settings.max_callers:
            _, old = self._cache.popitem(last=False)
            self._retire(old)

    def _retire(self, caller: Caller) -> None:
        """Close an evicted pool once requests already holding it are done with it
        (closing at once would fail their commands)."""

        async def later() -> None:
            await asyncio.sleep(RETIRE_S)
            await caller.aclose()

        task = asyncio.get_running_loop().create_task(later())
        self._retiring[task] = caller
        task.add_done_callback(lambda t: self._retiring.pop(t, None))

    async def forget(self, token: str) -> None:
        """Close a token's pool (its login was refused or it was revoked)."""
        try:
            key, _ = self._key(token)
        except Unauthorized:
            return
        self._parsed.pop(token, None)
        await self.forget_credential(key)

    async def forget_credential(self, key: Credential) -> None:
        """Close the pool of one credential (user, password sha256), as a revoke through
        this process knows it: its next request logs in again, and is refused."""
        c = self._cache.pop(key, None)
        if c is not None:
            await c.aclose()

    def pools(self) -> int:
        """Pools open (cached) in this process."""
        return len(self._cache)

    async def _open(self, claims: TokenClaims) -> Caller:
        # No explicit client settings: the pool adopts the partitions Redis is pinned to.
        if self.settings.insecure_local:
            bb = await Blackboard.connect(self.settings.redis_url or None)
        else:
            try:
                bb = await Blackboard.connect(self.settings.redis_url or None,
                                              username=claims.user, password=claims.password)
            except LoginRefused:
                raise Unauthorized(f"token {claims.id} was refused by Redis "
                                   "(revoked, or its user no longer exists)") from None
        _cap_pool(bb, self.settings.pool_size)
        mem = AgentMemory(bb, claims.agent, claims.teams)
        return Caller(claims.id, claims.agent, claims.teams, claims.operator, bb, mem,
                      claims.user)

    def pending_embeddings(self) -> float:
        """Entries the open callers' recall indexes hold still without a vector."""
        return float(sum(r.pending_embeddings() for c in self._cache.values()
                         if isinstance(r := c.memory.retriever, Retriever)))

    async def aclose(self) -> None:
        while self._cache:
            _, c = self._cache.popitem()
            await c.aclose()
        for task, c in list(self._retiring.items()):
            task.cancel()
            await c.aclose()
        self._retiring.clear()


def _cap_pool(bb: Blackboard, size: int) -> None:
    """At most ``size`` connections for short commands in one caller's pool (blocking
    readers add their own: :meth:`Blackboard.reserve_connections`). Set after connecting:
    explicit settings at connect would pin the partition count instead of adopting it."""
    if size < bb.settings.max_connections:
        bb.settings = replace(bb.settings, max_connections=size)
        bb.reserve_connections(0)


def bearer(request: Request) -> str | None:
    """The request's bearer token (None without one)."""
    h = request.headers.get("authorization", "")
    scheme, _, value = h.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def resolve_caller(request: Request) -> Caller:
    """FastAPI dependency: the request's caller (``Authorization: Bearer <token>``)."""
    callers: Callers = request.app.state.callers
    caller = await callers.resolve(bearer(request))
    request.state.caller = caller
    return caller
