"""Issue 26 item 4: the team pools its members' statements. The same statement from three
agents, in three batches, is one team entry with three attributions; a newer contrary
statement on its slot supersedes it, whichever batch comes first; free text merges with
its near duplicates by meaning when the worker has an embedder (in a batch, and across
batches through the dedupe job, which keeps every attribution); vectors come from what
the entries store."""

from __future__ import annotations

import numpy as np
import pytest

from blackboard import Blackboard, Entry, WriteRequest
from memory.levels import MemoryLevel
from memory.naming import agent_scope, team_scope
from memory.subscriptions import MemorySubscription
from retrieval.embedders import Embedder, default_embedder
from workers.maintenance import Maintenance
from workers.similarity import TextVectors
from workers.transform import TransformBridge

TEAM = team_scope("t1")
SAID = "Globex prefers email invoices."
#: Free text (no fact on a slot: pooled by content) and its paraphrase (cosine 0.99).
WANTS = "Globex wants its invoices sent by email."
WANTS_TOO = "Globex wants invoices sent by email."


async def _say(bb: Blackboard, agent: str, *texts: str) -> list[Entry]:
    return await bb.scope(agent_scope(agent, MemoryLevel.STM)).write_many(
        [WriteRequest(t, tags={"fact"}) for t in texts])


async def _pool(bb: Blackboard, agent: str, batch: list[Entry],
                embedder: Embedder | None = None, team: str = TEAM) -> None:
    edge = MemorySubscription(agent_scope(agent, MemoryLevel.STM), team, "team")
    reqs = await TransformBridge(bb, embedder=embedder)(edge, team, batch, bb.now_ms())
    await bb.scope(team).write_many(reqs)


async def _live(bb: Blackboard, team: str = TEAM) -> list[Entry]:
    return [e for e in await bb.scope(team).entries(limit=None) if e.superseded_by is None]


def _agents(e: Entry) -> list[str]:
    return sorted(a["agent"] for a in e.metadata["attribution"])


def _model() -> Embedder:
    emb = default_embedder()
    if emb is None:
        pytest.skip("no embedder installed (pip install 'reactive-blackboard[semantic]')")
    return emb


async def test_the_same_statement_from_three_agents_is_one_entry_with_three_attributions(
        bb: Blackboard) -> None:
    for a in ("a1", "a2", "a3"):
        await _pool(bb, a, await _say(bb, a, SAID))
    [held] = await _live(bb)
    assert held.text == SAID and _agents(held) == ["a1", "a2", "a3"]
    assert held.metadata["agents"] == ["a1", "a2", "a3"]
    assert held.metadata["duplicates"] == 2
    # a replayed batch (a crash before its buffer was trimmed) attributes nobody twice
    await _pool(bb, "a2", (await bb.scope(agent_scope("a2", MemoryLevel.STM))
                           .entries(limit=None)))
    [again] = await _live(bb)
    assert _agents(again) == ["a1", "a2", "a3"]


async def test_a_newer_contrary_statement_supersedes_the_teams_in_any_batch_order(
        bb: Blackboard) -> None:
    """Keyed by slot: Shelbyville, said last, is the team's statement; the Springfield
    statements said before it are its history, also the one whose batch comes last."""
    [late] = await _say(bb, "a3", "Acme Corp lives in Springfield.")  # said first
    await _pool(bb, "a1", await _say(bb, "a1", "Acme Corp lives in Springfield."))
    await _pool(bb, "a2", await _say(bb, "a2", "Acme Corp lives in Springfield."))
    [held] = await _live(bb)
    assert _agents(held) == ["a1", "a2"] and held.key == "team:fact:acme-corp:lives_in"
    await _pool(bb, "a1", await _say(bb, "a1", "Acme Corp lives in Shelbyville."))
    await _pool(bb, "a3", [late])
    [now] = await _live(bb)
    assert now.text == "Acme Corp lives in Shelbyville." and _agents(now) == ["a1"]
    assert sorted(r["agent"] for r in now.metadata["earlier"]) == ["a1", "a2", "a3"]
    assert {r["text"] for r in now.metadata["earlier"]} == {"Acme Corp lives in Springfield."}
    old = await bb.scope(TEAM).get(held.id)
    assert old.superseded_by is not None and "superseded" in old.tags


async def _said_embedded(bb: Blackboard, agent: str, text: str, model: Embedder) -> Entry:
    """A statement as the index role leaves it: with its vector stored."""
    scope = bb.scope(agent_scope(agent, MemoryLevel.STM))
    [e] = await scope.write_many([WriteRequest(text, tags={"fact"}, embedder=model.name,
                                               embedding=model.embed([text])[0].tobytes())])
    return await scope.get(e.id)


async def test_near_duplicates_in_a_batch_merge_by_meaning_only_with_an_embedder(
        bb: Blackboard) -> None:
    model = _model()
    batch = [await _said_embedded(bb, "a1", WANTS, model),
             await _said_embedded(bb, "a2", WANTS_TOO, model),
             await _said_embedded(bb, "a3", "Globex wants paper invoices.", model)]
    await _pool(bb, "a1", batch)
    assert len(await _live(bb)) == 3  # without a model only equal texts merge
    other = team_scope("t2")
    await _pool(bb, "a1", batch, model, other)
    by_text = {e.text: e for e in await _live(bb, other)}
    assert sorted(by_text) == [WANTS, "Globex wants paper invoices."]
    assert _agents(by_text[WANTS]) == ["a1", "a2"]
    assert by_text[WANTS].metadata["merge"] == "near"


async def test_dedupe_merges_near_duplicates_across_batches_keeping_every_attribution(
        bb: Blackboard) -> None:
    await _pool(bb, "a1", await _say(bb, "a1", WANTS))
    await _pool(bb, "a2", await _say(bb, "a2", WANTS_TOO))
    await _pool(bb, "a3", await _say(bb, "a3", WANTS))
    assert sorted(len(e.metadata["attribution"]) for e in await _live(bb)) == [1, 2]
    m = Maintenance(bb, "t", embedder=_model())
    assert sum([(await m.dedupe(p)).total for p in range(bb.partitions)]) == 1
    [held] = await _live(bb)
    assert _agents(held) == ["a1", "a2", "a3"] and held.metadata["duplicates"] == 2
    # the version a3's statement superseded is history (as_of reads it), not a duplicate
    assert [bool(e.superseded_by) for e in await bb.scope(TEAM).entries(limit=None)
            if e.id != held.id] == [True]


async def test_a_transformer_compares_stored_vectors_and_never_runs_the_model(
        bb: Blackboard) -> None:
    """The team transformer runs on the worker's event loop: an entry without a stored
    vector matches nothing by meaning there (a zero row), and only the dedupe job, off
    the loop, embeds it."""
    model = _model()
    stored = await _said_embedded(bb, "a1", WANTS, model)
    [bare] = await _say(bb, "a2", WANTS_TOO)
    sim = TextVectors.stored([stored, bare], model)
    got = sim([WANTS, bare.text, "A text from elsewhere."])
    assert np.allclose(got[0], model.embed([WANTS])[0], atol=1e-6)
    assert not got[1].any() and not got[2].any()
    await _pool(bb, "a1", [stored, bare], model)
    assert len(await _live(bb)) == 2  # no vector for the paraphrase: not merged here
    assert sum([(await Maintenance(bb, "t", embedder=model).dedupe(p)).total
                for p in range(bb.partitions)]) == 1  # the dedupe job embeds it
    [held] = await _live(bb)
    assert _agents(held) == ["a1", "a2"]


async def test_a_replay_drafts_nothing_and_an_updated_statement_is_applied(
        bb: Blackboard) -> None:
    """The replay check compares versions, not ids: the held entry cites the statement at
    the version it was drafted from, so the same batch again (a crash before its buffer
    was trimmed) writes nothing, while the statement re-read after an edit in place is
    new input that supersedes it; and that batch replayed writes nothing either."""
    stm = bb.scope(agent_scope("a1", MemoryLevel.STM))
    [said] = await _say(bb, "a1", "Acme Corp lives in Springfield.")
    await _pool(bb, "a1", [said])
    [held] = await _live(bb)
    await _pool(bb, "a1", [await stm.get(said.id)])  # crash replay
    assert len(await bb.scope(TEAM).entries(limit=None)) == 1
    await stm.update(said.id, value="Acme Corp lives in Shelbyville.")
    edited = await stm.get(said.id)
    assert edited.version > said.version
    await _pool(bb, "a1", [edited])
    [now] = await _live(bb)
    assert now.text == "Acme Corp lives in Shelbyville." and now.id != held.id
    assert now.metadata["supersedes"] == held.id and _agents(now) == ["a1"]
    assert [r["text"] for r in now.metadata["earlier"]] == ["Acme Corp lives in Springfield."]
    assert now.metadata["provenance"]["versions"] == {said.id: edited.version}
    for _ in range(2):  # the edited batch replayed, and re-read once more unchanged
        await _pool(bb, "a1", [await stm.get(said.id)])
    assert [e.id for e in await _live(bb)] == [now.id]
    assert len(await bb.scope(TEAM).entries(limit=None)) == 2


async def test_a_belief_counts_an_updated_source_once(bb: Blackboard) -> None:
    """Only a transformer that redrafts updated sources (the team's statements) reads a
    newer version as new input: a belief re-reading its own source after an update that
    keeps the statement (the survivor of a dedupe merge, say) adds no support."""
    from consolidation.transformer import redrafts_updates

    assert redrafts_updates("team") and not redrafts_updates("semantic")
    target = agent_scope("a1", MemoryLevel.SEMANTIC)
    edge = MemorySubscription(agent_scope("a1", MemoryLevel.STM), target, "semantic")
    stm = bb.scope(agent_scope("a1", MemoryLevel.STM))
    [said] = await _say(bb, "a1", "Acme Corp lives in Springfield.")

    async def fire(batch: list[Entry]) -> None:
        reqs = await TransformBridge(bb)(edge, target, batch, bb.now_ms())
        await bb.scope(target).write_many(reqs)

    await fire([said])
    [held] = await _live(bb, target)
    await stm.update(said.id, tags={"merged"})  # a new version, the same statement
    again = await stm.get(said.id)
    assert again.version > said.version
    await fire([again])
    [now] = await _live(bb, target)
    assert now.id == held.id and now.version == held.version
