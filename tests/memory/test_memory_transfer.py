"""Generational transfer (issue 27 item 2): ``AgentMemory.transfer_to`` on a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from blackboard import AccessDenied, Blackboard, InvalidArgument, NotFound
from blackboard.acl import AclAdmin
from blackboard.scope import Scope
from memory import AgentMemory, MemoryLevel
from memory.access import provision_agent
from memory.transfer import transfer

LTM = ("agent:{}:ltm:episodic", "agent:{}:ltm:semantic", "agent:{}:ltm:procedural")


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as m:
        yield m


@pytest.fixture()
async def admin(bb: Blackboard) -> AsyncIterator[AclAdmin]:
    """Grants for the test, revoked after it (ACL users outlive the flushed data)."""
    a = AclAdmin(bb)
    yield a
    for agent in ("a1", "a2", "a3"):
        await a.revoke(agent)


async def _counts(bb: Blackboard, agent: str) -> list[int]:
    return [await bb.scope(s.format(agent)).count() for s in LTM] + [
        await bb.scope(f"agent:{agent}:stm").count()]


async def test_successor_starts_with_long_term_memory_with_provenance(
        mem: AgentMemory, bb: Blackboard) -> None:
    ep = await mem.store({"episode": "invoice run"}, level=MemoryLevel.EPISODIC,
                         tags={"episode"}, importance=0.8)
    old = await bb.scope("agent:a1:ltm:semantic").write("Globex pays by cheque", key="globex.pay",
                                                        tags={"fact"})
    new = await bb.scope("agent:a1:ltm:semantic").write(
        "Globex pays by email invoice", key="globex.pay", key_mode="supersede", tags={"fact"})
    proc = await mem.store("send, wait, chase", level=MemoryLevel.PROCEDURAL, tags={"proc"})
    await mem.store("a step", level=MemoryLevel.STM)
    mine = await bb.scope("agent:a2:ltm:semantic").write("Globex is in Springfield",
                                                         key="globex.pay")

    report = await mem.transfer_to("a2")

    assert report.copied == {"episodic": 1, "semantic": 1, "procedural": 1}
    assert report.skipped == {"episodic": 0, "semantic": 1, "procedural": 0}  # old's history
    assert await _counts(bb, "a2") == [1, 2, 1, 0]  # stm is not long-term: not copied
    by_orig = {}
    for s in LTM:
        for e in await bb.scope(s.format("a2")).entries(limit=None):
            by_orig[e.metadata.get("original_id")] = e
    assert set(by_orig) == {ep.id, new.id, proc.id, None}
    copy = by_orig[new.id]
    assert copy.value == "Globex pays by email invoice" and copy.tags == {"fact"}
    assert copy.metadata["transferred_from"] == "agent:a1:ltm:semantic"
    assert copy.metadata["predecessor"] == "a1"
    assert copy.metadata["original_key"] == "globex.pay" and copy.key is None
    assert copy.source[-1] == new.id and copy.author == "a2"
    assert by_orig[ep.id].importance == 0.8
    # the successor's own holder of the key is untouched
    assert (await bb.scope("agent:a2:ltm:semantic").get(mine.id)).value == mine.value
    assert old.id not in by_orig


async def test_interrupted_transfer_resumes_and_copies_nothing_twice(
        mem: AgentMemory, bb: Blackboard, monkeypatch: pytest.MonkeyPatch) -> None:
    originals = [await mem.store(f"fact {i}", level=MemoryLevel.SEMANTIC) for i in range(25)]
    real = Scope.write_many
    calls = {"n": 0}

    async def crash_after_one_page(self: Scope, items: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 1:
            raise ConnectionError("killed mid-transfer")
        return await real(self, items)

    monkeypatch.setattr(Scope, "write_many", crash_after_one_page)
    with pytest.raises(ConnectionError):
        await transfer(mem, "a2", ["semantic"], page=10)
    assert await bb.scope("agent:a2:ltm:semantic").count() == 10  # one whole page
    monkeypatch.setattr(Scope, "write_many", real)

    again = await transfer(mem, "a2", ["ltm:semantic"], page=10)
    assert (again.copied, again.present) == ({"semantic": 15}, {"semantic": 10})
    third = await mem.transfer_to("a2", levels=["semantic"])
    assert (third.copied, third.present) == ({"semantic": 0}, {"semantic": 25})
    copies = await bb.scope("agent:a2:ltm:semantic").entries(limit=None)
    assert sorted(e.metadata["original_id"] for e in copies) == sorted(e.id for e in originals)
    # the successor forgets a copy (or it decays away): a later transfer does not bring it back
    assert await bb.scope("agent:a2:ltm:semantic").delete(copies[0].id)
    later = await mem.transfer_to("a2", levels=["semantic"])
    assert (later.copied, later.present) == ({"semantic": 0}, {"semantic": 25})
    assert await bb.scope("agent:a2:ltm:semantic").count() == 24


async def test_bad_input_is_refused_and_writes_nothing(
        mem: AgentMemory, bb: Blackboard, clean_redis: Any) -> None:
    await mem.store("fact", level=MemoryLevel.SEMANTIC)
    before = sorted(clean_redis.keys("*"))
    with pytest.raises(InvalidArgument, match="itself"):
        await mem.transfer_to("a1")
    for bad in (["working"], ["stm"], ["nope"], []):
        with pytest.raises(InvalidArgument, match="levels"):
            await mem.transfer_to("a2", levels=bad)
    for who in ("a:2", "", "a 2"):
        with pytest.raises(InvalidArgument):
            await mem.transfer_to(who)
    assert sorted(clean_redis.keys("*")) == before


async def test_refused_across_teams_the_caller_is_not_in(mem: AgentMemory, bb: Blackboard,
                                                         admin: AclAdmin) -> None:
    await mem.store("fact", level=MemoryLevel.SEMANTIC)
    await admin.grant("a1", ["t1"])
    await admin.grant("a2", ["t1", "t2"])
    await admin.grant("a3", ["t1"])
    with pytest.raises(AccessDenied, match="t2"):
        await mem.transfer_to("a2")
    with pytest.raises(NotFound, match="no ACL grant"):
        await mem.transfer_to("a9")  # grants are in use: an ungranted successor is a typo
    assert await _counts(bb, "a2") == [0, 0, 0, 0]
    assert (await mem.transfer_to("a3")).total_copied == 1


async def test_a_confined_agent_cannot_transfer_redis_refuses(bb: Blackboard, redis_url: str,
                                                              admin: AclAdmin) -> None:
    g = await admin.grant("a1", ["t1"], rotate=True)
    await admin.grant("a2", ["t1"])
    await provision_agent(bb, "a1", ["t1"])
    await bb.scope("agent:a1:ltm:semantic").write("fact")
    async with (Blackboard.connect(redis_url, username=g.username, password=g.password) as abb,
                AgentMemory(abb, "a1", teams=["t1"], default_retriever=False) as confined):
        with pytest.raises(AccessDenied, match="operator"):
            await confined.transfer_to("a2")
        # past our own checks, Redis itself refuses the write into a2's scope
        with pytest.raises(AccessDenied) as refused:
            await abb.scope("agent:a2:ltm:semantic").write("forged")
        assert refused.value.by_server
        with pytest.raises(AccessDenied):  # nor read or reset the successor's ledger
            await abb.client.delete(abb.scope("agent:a2:ltm:semantic").keys.transferred)
    assert await _counts(bb, "a2") == [0, 0, 0, 0]


async def test_transfer_on_the_cluster(cbb: Blackboard) -> None:
    async with AgentMemory(cbb, "a1", default_retriever=False) as m:
        for lvl in (MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL):
            await m.store(f"{lvl.value} one", level=lvl)
        first = await transfer(m, "a2", page=1)
        again = await m.transfer_to("a2")
    assert first.total_copied == 3 and again.total_copied == 0
    assert sum(again.present.values()) == 3
    assert await _counts(cbb, "a2") == [1, 1, 1, 0]
