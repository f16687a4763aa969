"""Issue 23 item 3: the index role reads the partitions' vector queues, not the bus, so a
lagging model holds neither bus events nor retired entries; every entry still gets its
vector, exactly once (single Redis and the cluster fixture)."""

from __future__ import annotations

import asyncio

import numpy as np
import numpy.typing as npt
from recall_support import CountingEmbedder, GatedEmbedder

from blackboard import Blackboard, ScopePolicy
from blackboard.keys import PartitionKeys, partition_of
from workers.indexer import IndexRole

S = "agent:a1:working"


async def _until(cond, seconds: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.05)):
        if await cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def _all_embedded(bb: Blackboard, scopes: list[str], name: str) -> bool:
    for s in scopes:
        for e in await bb.scope(s).entries(limit=None):
            if e.embedder != name:
                return False
    return True


async def test_lagging_index_holds_neither_bus_nor_retired_entries(bb: Blackboard) -> None:
    emb = GatedEmbedder()
    role = IndexRole(bb, "idx", embedder=emb, block_ms=50)
    await bb.ensure_groups(["summarize"])
    await role.start()
    sc = bb.scope(S)
    await sc.set_policy(ScopePolicy(max_entries=5))
    try:
        for i in range(40):  # capacity 5: 35 evicted while the model is stuck
            await sc.write(f"note {i}")
        part = sc.partition
        await bb.relays.relay_all([part])
        # the only group takes everything in
        await _until(lambda: _drain(bb, part))
        rep = await bb.trim(partitions=[part])
        counts = await bb.bus(part).counts()
        assert counts.length <= 1, rep  # nothing held for the index role (the trim
        # keeps the group's last delivered event)
        assert counts.retained == 0  # evicted entries reaped though never embedded
        assert counts.unembedded >= 5
        emb.gate.set()
        await _until(lambda: _all_embedded(bb, [S], emb.name))
        await _until(lambda: _queue_empty(bb, part))
    finally:
        emb.gate.set()
        await role.stop()
    assert role.failures == 0


async def _queue_empty(bb: Blackboard, part: int) -> bool:
    return await bb.vector_queue(part).length() == 0


async def _drain(bb: Blackboard, part: int) -> bool:
    """Read and ack the summarize group's events of ``part``: True once nothing is left."""
    await bb.relays.relay_all([part])
    r = await bb.client.xreadgroup("summarize", "c", {PartitionKeys(part).bus: ">"}, count=500)
    if r:
        ids = [i for _, evs in r for i, _ in evs]
        await bb.bus(part).ack("summarize", [i.decode() for i in ids])
        return False
    inbox = await bb.client.llen(PartitionKeys(part).inbox)
    return inbox == 0


async def _exactly_once(bb: Blackboard) -> None:
    emb = CountingEmbedder()
    # two indexers over every partition race for the same queue members
    roles = [IndexRole(bb, f"idx-{i}", embedder=emb, block_ms=50, count=7) for i in range(2)]
    for r in roles:
        await r.start()
    scopes = [f"agent:a{i}:working" for i in range(6)]
    try:
        written = []
        for s in scopes:
            written += await bb.scope(s).write_many([f"{s} note {j}" for j in range(15)])
        # an update mid-way: its new text gets its own vector
        upd = written[3]
        await bb.scope(upd.scope).update(upd.id, value="changed text")
        await _until(lambda: _all_embedded(bb, scopes, emb.name))
        await _until(lambda: _all_queues_empty(bb))
    finally:
        for r in roles:
            await r.stop()
    stored = sum(r.embedded for r in roles)
    # each queued version embedded once: 90 writes, plus the update unless it came
    # before the first vector of its entry was stored (then the write's was refused)
    assert stored in (90, 91), stored
    got = await bb.scope(upd.scope).get(upd.id)
    assert got.embedding == emb.inner.embed(["changed text"]).tobytes()


async def _all_queues_empty(bb: Blackboard) -> bool:
    return all([await bb.vector_queue(p).length() == 0 for p in range(bb.partitions)])


async def test_every_entry_embedded_exactly_once(bb: Blackboard) -> None:
    await _exactly_once(bb)


async def test_every_entry_embedded_exactly_once_on_cluster(cbb: Blackboard) -> None:
    await _exactly_once(cbb)


async def test_junk_queue_members_are_dropped(bb: Blackboard) -> None:
    emb = CountingEmbedder()
    sc = bb.scope(S)
    q = bb.vector_queue(sc.partition)
    other = next(f"agent:x{i}:working" for i in range(100)
                 if bb.scope(f"agent:x{i}:working").partition != sc.partition)
    await bb.client.zadd(PartitionKeys(sc.partition).unembedded, {
        "no bar": 1, "bad scope!|01ABC": 2, f"{other}|01ABC": 3, f"{S}|01MISSING": 4,
    })
    role = IndexRole(bb, "idx", embedder=emb, block_ms=50)
    await role.start()
    try:
        await _until(lambda: _queue_empty(bb, sc.partition))
    finally:
        await role.stop()
    assert role.embedded == 0 and role.failures == 0 and await q.length() == 0


async def test_backlog_of_the_old_index_group_is_carried_over(bb: Blackboard) -> None:
    """An index role of the bus-reading kind left its group behind with unacked events:
    they are queued, embedded, and the group is gone (it would hold the trim back)."""
    await bb.ensure_groups(["index"])
    sc = bb.scope(S)
    es = await sc.write_many([f"old {i}" for i in range(5)])  # written before `indexing`
    bus = PartitionKeys(sc.partition).bus
    await bb.relays.relay_all([sc.partition])
    assert await _bus_len(bb, bus, 5)
    emb = CountingEmbedder()
    role = IndexRole(bb, "idx", embedder=emb, block_ms=50)
    await role.start()
    try:
        await _until(lambda: _all_embedded(bb, [S], emb.name))
    finally:
        await role.stop()
    assert role.adopted == len(es) and role.embedded == len(es)
    assert "index" not in {g.role for g in await bb.bus(sc.partition).groups()}


async def _bus_len(bb: Blackboard, bus: str, n: int) -> bool:
    return int(await bb.client.xlen(bus)) >= n


class SizedEmbedder(GatedEmbedder):
    """A gated model that records the size of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.sizes.append(len(texts))
        return super().embed(texts)


async def test_what_is_read_while_the_model_runs_goes_in_its_next_call(bb: Blackboard) -> None:
    # Issue 31: one call as large as the backlog read meanwhile (up to 512) pads less and
    # runs the model fewer times than calls of 128; the first call does not wait for more.
    emb = SizedEmbedder()
    role = IndexRole(bb, "idx", embedder=emb, block_ms=50)
    scopes, seen = [], set()  # 8 scopes in 8 partitions: a visit reads one scope whole
    for i in range(200):
        s = f"agent:g{i}:working"
        if len(scopes) < 8 and (p := partition_of(s, bb.partitions)) not in seen:
            seen.add(p)
            scopes.append(s)
    for s in scopes:
        await bb.scope(s).write_many([f"{s} note {j}" for j in range(60)])
    await role.start()
    try:  # the model holds its first call while the role reads the rest
        await _until(lambda: _in_hand(role, 480))
        emb.gate.set()
        await _until(lambda: _all_embedded(bb, scopes, emb.name))
    finally:
        emb.gate.set()
        await role.stop()
    assert emb.sizes == [180, 300], emb.sizes  # 3 scopes, then the other 5 in one call


async def _in_hand(role: IndexRole, n: int) -> bool:
    return len(role._in_hand) >= n
