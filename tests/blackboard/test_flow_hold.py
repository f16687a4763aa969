"""The dataflow hold (_flow.lua): buffered items hold their entries, consolidated items
release them, a retired entry is reaped only when nothing needs it — and an entry its agent
mangled never fails a batch that carries other agents' items."""

from __future__ import annotations

from blackboard import Blackboard, ScopePolicy
from blackboard.keys import PartitionKeys
from blackboard.scripts import run_script

SCOPE = "agent:a1:working"


async def _buffer(bb: Blackboard, p: int, key: str, items: list[str]) -> list[int]:
    """Deliver the partition's bus to group 'g' and buffer ``items`` with the first event."""
    pk, c = PartitionKeys(p), bb.client
    version = (await c.get(pk.edges_version) or b"0").decode()
    reply = await c.xreadgroup("g", "w", {pk.bus: ">"})
    ids = [i.decode() for _, items_ in reply for i, _ in items_]
    args = ["g", "w", str(len(ids)), ids[0], ids[-1], version]
    for n, sid in enumerate(ids):
        its = items if n == 0 else []
        args += [sid, str(len(its))]
        for it in its:
            args += ["1", it]
    return [int(x) for x in await run_script(c, "buffer", [pk.bus, pk.pendings, key], args)]


async def _take(bb: Blackboard, p: int, key: str) -> int:
    pk, c = PartitionKeys(p), bb.client
    raw = await c.lrange(key, 0, -1)
    return int(await run_script(c, "pending_take", [key, pk.dlq, pk.pendings, pk.inflight],
                                ["trim", str(len(raw)), raw[0], raw[-1], "", "e", "t", "10"]))


async def test_retired_entries_wait_for_their_buffer_then_are_reaped(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    p, c = s.partition, bb.client
    await s.set_policy(ScopePolicy(max_entries=2))
    await bb.bus(p).ensure_group("g")
    es = [await s.write({"i": i}) for i in range(3)]
    await bb.relays.relay_all()
    key = PartitionKeys(p).pending("e", "agent:a1:stm")
    assert await _buffer(bb, p, key, [f"1|{SCOPE}|{e.id}" for e in es]) == [3, 0]
    assert [await c.hget(s.keys.entry(e.id), "holds") for e in es] == [b"1"] * 3
    # es[0] was evicted before the batch was read: retired, still held.
    assert await c.hget(s.keys.entry(es[0].id), "retired") == b"evicted"
    assert await s.count() == 2
    await bb.trim()  # the flowmark passes every event; the buffer still holds es[0]
    assert await c.exists(s.keys.entry(es[0].id))
    await _take(bb, p, key)  # consolidated: the hold goes, and with it the entry
    assert not await c.exists(s.keys.entry(es[0].id))
    assert await c.smembers(PartitionKeys(p).retired) == set()
    assert [await c.hget(s.keys.entry(e.id), "holds") for e in es[1:]] == [b"0"] * 2


async def test_a_mangled_entry_fails_no_batch(bb: Blackboard) -> None:
    mine, theirs = bb.scope(SCOPE), bb.scope("agent:a1:stm")
    p, c = mine.partition, bb.client
    await bb.bus(p).ensure_group("g")
    a = await mine.write("a")
    b = await mine.write("b")
    await bb.relays.relay_all()
    await c.delete(mine.keys.entry(a.id))
    await c.set(mine.keys.entry(a.id), "not a hash")  # raw commands on its own entry
    await c.hset(mine.keys.entry(b.id), "holds", "junk")
    key = PartitionKeys(p).pending("e", theirs.id)
    items = [f"1|{SCOPE}|{a.id}", f"1|{SCOPE}|{b.id}", f"1|{SCOPE}|01OTHER0000000000000000000"]
    assert await _buffer(bb, p, key, items) == [1, 0]  # b only: a is no entry, the third gone
    assert await _take(bb, p, key) == 1
