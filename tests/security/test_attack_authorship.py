"""Authorship comes from who wrote, never from the data (issue 24, item 4).

The attack: a1 stores 20 entries naming b1 as their writer (``metadata.agent="b1"`` or the
tag ``agent:b1``); the team aggregation used to attribute all 20 to b1. Now the write
script records the author (the owner of the ``agent:<a>`` scope; in team scopes the
writer the ACL lets the connection act as), and every consumer reads that; the names in
the data are kept and shown as claims.
"""

from __future__ import annotations

from support_attack import AttackEnv, Tally, attack_base, attack_env

from blackboard import WriteRequest
from consolidation.team import team
from consolidation.transformer import TransformContext
from memory.response_bodies import EntryOut

__all__ = ["attack_base", "attack_env"]  # fixtures


async def test_forged_writer_is_a_claim_never_the_author(attack_env: AttackEnv) -> None:
    a1 = await attack_env.agent("a1", ("t1",))
    b1 = await attack_env.agent("b1", ("t1",))
    tally = Tally("authorship")
    stm = a1.scope("agent:a1:stm")
    forged = [
        WriteRequest(f"note {i} from a1", metadata={"agent": "b1"} if i % 2 else None,
                     tags=None if i % 2 else ["agent:b1"])
        for i in range(20)
    ]
    written = [await stm.write(r.value, metadata=r.metadata, tags=r.tags) for r in forged[:10]]
    written += await stm.write_many(forged[10:])
    # an author named in the call is ignored in an agent scope: the owner is the author
    written.append(await stm.write("signed as b1", author="b1"))
    genuine = await b1.scope("agent:b1:stm").write("note 0 from a1")  # b1's own, same text
    for e in [*written, genuine]:
        tally.tries += 1
        if e.author != ("b1" if e is genuine else "a1"):
            tally.harmed += 1
    assert {tuple(EntryOut.of(e).claimed_agents) for e in written[:20]} == {("b1",)}

    # In a team scope the author is the writer the ACL lets this connection act as.
    t1 = a1.scope("team:t1")
    assert (await t1.write("a1 in the team", author="a1")).author == "a1"
    for attempt in ("b1", "nobody"):
        await tally.attempt(f"team write as {attempt}", t1.write("forged", author=attempt))
    assert await attack_env.admin.scope("team:t1").count() == 1

    # Rewriting the stored field with raw commands changes nothing in an agent scope.
    ekey = stm.keys.entry(written[0].id)
    await a1.client.hset(ekey, "author", "b1")
    tally.tries += 1
    if (await attack_env.admin.scope("agent:a1:stm").get(written[0].id)).author != "a1":
        tally.harmed += 1

    # What the team worker computes from these entries (as read by the service).
    admin = attack_env.admin
    batch = await admin.scope("agent:a1:stm").entries(limit=None)
    batch += await admin.scope("agent:b1:stm").entries(limit=None)
    drafts = await team(batch, TransformContext("edge-team", "team:t1"))
    attributions = [a for d in drafts for a in d.metadata["attribution"]]
    assert len(attributions) == 22
    for a in attributions:
        tally.tries += 1
        want = "b1" if a["entry"] == genuine.id else "a1"
        if a["agent"] != want:
            tally.harmed += 1
    claims = {a["entry"]: a.get("claimed_agent") for a in attributions}
    assert all(claims[e.id] == ["b1"] for e in written[:20])
    merged = next(d for d in drafts if len(d.metadata["attribution"]) == 2)
    assert merged.metadata["agents"] == ["a1", "b1"]  # the genuine b1 entry, merged
    for d in drafts:
        assert "agent" not in d.metadata  # the first member's claim is not the team's word
        if d is not merged and "claimed_agents" in d.metadata:
            assert d.metadata["agents"] == ["a1"] and d.metadata["claimed_agents"] == ["b1"]
    tally.line()
    assert tally.harmed == 0, tally.escapes
