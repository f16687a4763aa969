"""Who is calling: a token resolved to a Redis connection logged in as the token's user.

Each token carries its Redis username and password (:mod:`gateway.tokens`), so the
gateway holds no secret: :class:`Callers` opens one connection pool per token, logged in
as that user, and every memory call of the request runs on it — Redis itself refuses
another agent's keys. Pools are kept (least recently used closed first) so a request
pays no login; a revoked token's connections are killed by ``token revoke`` and the
re-login fails, so the next request gets 401.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass

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


@dataclass
class Caller:
    """One authenticated caller. ``bb`` is logged in as the token's Redis user;
    ``memory`` is the agent's :class:`AgentMemory` on it. ``operator``: the token's user
    is the service user, which may read every scope (map, stats, dashboard)."""

    token_id: str
    agent_id: str
    teams: tuple[str, ...]
    operator: bool
    bb: Blackboard
    memory: AgentMemory

    @property
    def principal(self) -> str:
        """The label requests are counted under (metrics, rate limit): the token id."""
        return self.token_id

    async def aclose(self) -> None:
        await self.memory.aclose()
        await self.bb.close()


class Callers:
    """The per-token connection pools of one gateway process (LRU, ``max_callers``)."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self._cache: OrderedDict[str, Caller] = OrderedDict()
        self._opening: dict[str, asyncio.Future[Caller]] = {}
        self._retiring: dict[asyncio.Task[None], Caller] = {}

    async def resolve(self, token: str | None) -> Caller:
        """The caller of ``token`` (the raw bearer token); :class:`Unauthorized` when it
        is missing, malformed, revoked or its Redis login is refused."""
        if self.settings.insecure_local:
            token = token or ""
            key = "local"
        else:
            if not token:
                raise Unauthorized("no bearer token: send `Authorization: Bearer <token>` "
                                   "(create one with `blackboard token create --agent A`)")
            key = token
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
            caller = await self._open(token)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._opening.pop(key, None)
        fut.set_result(caller)
        self._cache[key] = caller
        while len(self._cache) > self.settings.max_callers:
            _, old = self._cache.popitem(last=False)
            self._retire(old)
        return caller

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
        c = self._cache.pop(token, None)
        if c is not None:
            await c.aclose()

    async def _open(self, token: str) -> Caller:
        # No explicit client settings: the pool adopts the partitions Redis is pinned to
        # (its size is BLACKBOARD_MAX_CONNECTIONS, like every client's).
        if self.settings.insecure_local:
            bb = await Blackboard.connect(self.settings.redis_url or None)
            claims = TokenClaims("local", SERVICE_USER, "", LOCAL_AGENT, (), True)
        else:
            claims = parse_token(token)
            try:
                bb = await Blackboard.connect(self.settings.redis_url or None,
                                              username=claims.user, password=claims.password)
            except LoginRefused:
                raise Unauthorized(f"token {claims.id} was refused by Redis "
                                   "(revoked, or its user no longer exists)") from None
        mem = AgentMemory(bb, claims.agent, claims.teams)
        return Caller(claims.id, claims.agent, claims.teams, claims.operator, bb, mem)

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
