"""The per-token pool cache in one process: LRU-bounded, evicted pools closed only after
the requests holding them are done."""

from __future__ import annotations

import asyncio

import pytest

from gateway import caller as caller_mod
from gateway.caller import Callers
from gateway.refusals import Unauthorized
from gateway.settings import GatewaySettings
from tests.gateway.gateway_support import GatewayProc


async def test_lru_bounded_and_evicted_pools_still_serve(gateway: GatewayProc, monkeypatch):
    monkeypatch.setattr(caller_mod, "RETIRE_S", 0.3)
    toks = [gateway.token(a) for a in ("a1", "a2", "a3")]
    callers = Callers(GatewaySettings(redis_url=gateway.redis.url, max_callers=2))
    try:
        first = await callers.resolve(toks[0])
        assert await callers.resolve(toks[0]) is first  # cached
        await callers.resolve(toks[1])
        await callers.resolve(toks[2])  # evicts a1's pool...
        assert await first.memory.list_tags() == {}  # ...which still serves for a while
        await asyncio.sleep(0.6)
        again = await callers.resolve(toks[0])
        assert again is not first and again.agent_id == "a1"
        # concurrent first requests of one token share one login
        got = await asyncio.gather(*(callers.resolve(toks[1]) for _ in range(10)))
        assert len({id(c) for c in got}) == 1
        with pytest.raises(Unauthorized):
            await callers.resolve(None)
        with pytest.raises(Unauthorized):
            await callers.resolve(toks[0][:-4] + "AAAA")
    finally:
        await callers.aclose()


def test_a_token_is_parsed_once_and_the_parses_kept_are_bounded(monkeypatch):
    from gateway.tokens import TokenClaims, encode_token

    parsed: list[str] = []
    real = caller_mod.parse_token
    monkeypatch.setattr(caller_mod, "parse_token", lambda t: parsed.append(t) or real(t))
    monkeypatch.setattr(caller_mod, "PARSED_TOKENS", 3)
    callers = Callers(GatewaySettings(redis_url="redis://127.0.0.1:1"))
    toks = [encode_token(TokenClaims(f"id{i}", f"bb-agent-a{i}", "pw", f"a{i}", (), False))
            for i in range(5)]
    first = callers._key(toks[0])
    assert callers._key(toks[0]) == first and parsed == [toks[0]]
    for t in toks[1:]:
        callers._key(t)
    assert len(callers._parsed) == 3 and toks[0] not in callers._parsed
    callers._key(toks[0])  # pushed out: parsed again, same answer
    assert parsed.count(toks[0]) == 2
    with pytest.raises(Unauthorized):  # a malformed token is refused every time
        callers._key(toks[1][:-6] + "!!!!!!")
