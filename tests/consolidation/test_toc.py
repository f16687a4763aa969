"""The table of contents of a LoCoMo conversation stored through ``add_messages``: month
nodes match the sessions, the walk explores by period, timeline/expand, replays, access."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator

import pytest

from bench.locomo import load, sessions_of
from blackboard import AccessDenied, Blackboard, InvalidArgument
from blackboard.acl import AclAdmin
from blackboard.toc import TocStore
from consolidation.toc import apply_entries, rebuild
from memory import AgentMemory
from retrieval.toc import TocNode
from retrieval.toc_walk import walk_toc

SCOPE = "agent:c1:ltm:episodic"


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "c1", default_retriever=False) as m:
        yield m


async def _store(mem: AgentMemory) -> list:
    sessions = sessions_of(load([1])[0])
    for name, msgs in sessions:
        await mem.add_messages(name, msgs)
    return sessions


async def test_month_nodes_match_the_sessions_and_the_walk_explores_may(
        mem: AgentMemory, bb: Blackboard) -> None:
    sessions = await _store(mem)
    assert await rebuild(bb, SCOPE) == sum(len(m) for _, m in sessions)
    want: dict[str, list[int]] = defaultdict(list)
    for _, msgs in sessions:
        for m in msgs:
            want[f"{m.at:%Y-%m}"].append(int(m.at.timestamp() * 1000))
    year = await mem.timeline(at="2023", depth=1)
    assert [c.node.id for c in year.children] == [f"m{k}" for k in sorted(want)]
    for c in year.children:
        ts = want[c.node.id[1:]]
        assert (c.node.start_ms, c.node.end_ms, c.node.count) == (min(ts), max(ts), len(ts))
        assert c.node.summary and c.node.keywords and set(c.node.actors) == {"Caroline",
                                                                             "Melanie"}
    # explore, index-free: the month's node first, with its summary
    w = await walk_toc(bb, [SCOPE], "what happened in May 2023")
    assert w.nodes[0].id == "m2023-05" and w.nodes[0].summary
    # nothing outside May but its ancestors; May's weeks, days and sessions follow it
    assert {n.id for n in w.nodes if n.id[1:8] != "2023-05"} <= {"root", "y2023"}
    assert {n.id for n in w.nodes} >= {"w2023-05-08", "s2023-05-08.0", "s2023-05-25.0"}
    assert w.nodes_visited <= 20 and w.entries
    # drill down: May's weeks, a segment's raw entries with their ids
    may = await mem.timeline(level="month", at="2023-05-10", depth=3)
    seg = may.children[0].children[0].children[0].node
    got = await mem.expand(seg.ref)
    assert [e.id for e in got] == list(seg.entries) and len(got) == len(sessions[0][1])
    assert got[0].value["text"] == sessions[0][1][0].text
    assert [e.id for e in await mem.expand(seg.id)] == list(seg.entries)  # the bare id


async def test_a_replayed_batch_changes_nothing(mem: AgentMemory, bb: Blackboard) -> None:
    from blackboard import WriteRequest
    es = await bb.scope(SCOPE).write_many([WriteRequest(f"step {i} checked the pump")
                                           for i in range(30)])
    assert await apply_entries(bb, SCOPE, es[:20]) == 20
    before = await TocStore(bb, SCOPE).read_all()
    assert await apply_entries(bb, SCOPE, es[:20]) == 0  # the replay: placed already
    assert await TocStore(bb, SCOPE).read_all() == before
    assert await apply_entries(bb, SCOPE, es) == 10
    root = (await mem.timeline(depth=0)).node
    assert root.count == 30 and root.keywords.get("pump") == 30


async def test_bad_input_and_foreign_segments(mem: AgentMemory, bb: Blackboard,
                                              redis_url: str) -> None:
    await mem.add_messages("s1", [])
    for kw, field in ((dict(at="2023-13"), "at:"), (dict(depth=-1), "depth:"),
                      (dict(level="month"), "at:")):
        with pytest.raises(InvalidArgument, match=rf"^{field}"):
            await mem.timeline(**kw)
    other = "agent:c2:ltm:episodic"
    e = await bb.scope(other).write("their secret plan")
    await apply_entries(bb, other, [e])
    seg = (await TocStore(bb, other).read_all()).nodes
    ref = f"{other}#{next(i for i in seg if i.startswith('s'))}"
    with pytest.raises(AccessDenied):
        await mem.expand(ref)  # memory refuses first
    admin = AclAdmin(bb)
    g = await admin.grant("c1", [], rotate=True)
    try:
        async with Blackboard.connect(redis_url, username=g.username,
                                      password=g.password) as abb:
            with pytest.raises(AccessDenied) as err:  # and Redis refuses the read itself
                await TocStore(abb, other).read(["root"])
            assert err.value.by_server
            assert (await TocStore(abb, SCOPE).read(["root"])).version == "0"  # its own: fine
    finally:
        await admin.revoke("c1")


async def test_a_structured_entry_reads_as_its_text_not_its_json(
        mem: AgentMemory, bb: Blackboard) -> None:
    # The demo's episodes have no text field: their nodes summarised the value's JSON.
    scope = "agent:c1:working"
    steps = ["agent1 plans invoice task agent1-invoice-21.",
             "agent1 ran fetch_email for agent1-invoice-21: done.",
             "agent1 ran post_ledger for agent1-invoice-21: failed."]
    await bb.scope(scope).write({"task": "agent1-invoice-21", "title": None,
                                 "actors": ["agent1"], "start_ms": 1795758724556,
                                 "steps": steps, "outcome": "failure", "open": False})
    assert await rebuild(bb, scope) == 1
    snap = await TocStore(bb, scope).read_all()
    nodes = [n for i, raw in snap.nodes.items()
             if (n := TocNode.from_json(scope, i, raw)) is not None and n.count]
    assert nodes
    for n in nodes:
        assert "{" not in n.summary and "_ms" not in n.summary, n.summary
        assert not {"actors", "null", "open"} & set(n.keywords), n.keywords
    assert any("post_ledger" in n.summary for n in nodes)
