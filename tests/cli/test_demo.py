"""The CLI end to end: the demo (real worker processes) and the map, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from cli.demo_agents import PROCEDURES, script
from workers.roles import ROLES

KEY = "fact:world_fact:entity:acme-corp:lives_in"

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the CLI as a process


def _cli(*args: str, url: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BLACKBOARD_REDIS_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )


def test_demo_consolidates_every_level_and_exits_0(redis_url: str, clean_redis: object) -> None:
    r = _cli("demo", "--agents", "2", "--steps", "80", "--json", url=redis_url)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["worker_exit_codes"] == [0] * len(ROLES)  # 8: one per role
    assert report["dlq"] == {}
    kinds = {e["value"]["task_kind"] for e in report["procedures"]}
    assert kinds <= {"invoice", "reconcile", "support"} and kinds
    # one procedure per skill (issue 26), the learned ones with the skill's usual steps
    live = [e["value"] for e in report["procedures"] if "superseded" not in e["tags"]]
    assert sorted(v["task_kind"] for v in live) == sorted(kinds)
    assert all(tuple(v["steps"]) == PROCEDURES[v["task_kind"]]
               for v in live if v["status"] == "learned")
    facts = {e["key"] for e in report["semantic"]}
    assert KEY in facts
    # the move late in the run changed the belief: the live one names the new town
    live = [e for e in report["semantic"]
            if e["key"] == KEY and "superseded" not in e["tags"]]
    assert live and live[-1]["value"]["object"].lower() == "shelbyville"
    assert report["episodes"] and report["team"]
    assert all(len(e["value"]["steps"]) > 1 for e in report["episodes"])  # none cut short
    assert all(e["metadata"].get("attribution") for e in report["team"])
    # collective memory (issue 27): every fact both agents came to hold, with both agents;
    # the skills both learned, pooled
    stated = [{s.text.rstrip(".").replace(" a ", " ") for s in script(a, 80, 7)
               if s.kind == "observation" and "Springfield" not in s.text}
              for a in ("agent1", "agent2")]
    held = {e["value"]["statement"]: e for e in report["collective"]
            if e["metadata"].get("promoted") and e["metadata"]["kind"] == "fact"}
    assert stated[0] & stated[1] and stated[0] & stated[1] <= set(held), (stated, list(held))
    assert all(e["metadata"]["agents"] == ["agent1", "agent2"] for e in held.values())
    assert not any("Springfield" in t for t in held)
    pooled = [e["value"] for e in report["collective"]
              if e["metadata"].get("promoted") and e["metadata"]["kind"] == "procedure"]
    assert pooled and all(tuple(v["steps"]) == PROCEDURES[v["task_kind"]] for v in pooled)

    m = _cli("map", "--agent", "agent1", "--team", "ops", "--json", url=redis_url, timeout=60)
    assert m.returncode == 0, m.stderr[-2000:]
    scopes = {s["scope"]: s for s in json.loads(m.stdout)["scopes"]}
    assert scopes["agent:agent1:ltm:procedural"]["count"] > 0
    assert "agent:agent2:working" not in scopes  # another agent's private scope is not shown


def test_demo_recall_gives_current_truth_as_of_and_history(
    redis_url: str, clean_redis: object
) -> None:
    """Issue 25 on the demo's own data: after its last step every agent's and the team's
    recall of "where is Acme Corp" gives Shelbyville first; ``as_of`` before the move gives
    Springfield; the history (Springfield superseded by Shelbyville) stays readable."""
    import asyncio

    r = _cli("demo", "--agents", "2", "--steps", "80", "--json", url=redis_url)
    assert r.returncode == 0, r.stderr[-3000:]
    asyncio.run(_check_truth(redis_url, ["agent1", "agent2"]))


async def _versions(bb: Any, scopes: list[str]) -> list[tuple[Any, ...]]:
    """Every version on the moved key: what a failure message needs to be read."""
    from retrieval.truth import belief_valid_from, belief_valid_to

    return [(s, e.value.get("object"), e.metadata.get("status"), belief_valid_from(e),
             belief_valid_to(e), e.created_at) for s in scopes
            for e in await bb.scope(s).entries(limit=1000) if e.key == KEY]


async def _check_truth(url: str, agents: list[str]) -> None:
    from datetime import UTC, datetime

    from blackboard import Blackboard
    from cli.demo_report import TEAM
    from gateway.dash.beliefs import _current
    from memory import AgentMemory, MemoryQuery

    def place(text: str) -> str | None:
        return next((p for p in ("Shelbyville", "Springfield") if p in text), None)

    def instant(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, UTC)

    async def moves(scopes: list[str]) -> int:
        """When the first Shelbyville belief among ``scopes`` became valid."""
        return min([int(e.metadata["valid_from_ms"]) for s in scopes
                    for e in await bb.scope(f"{s}:ltm:semantic").entries(limit=1000)
                    if e.key == KEY and "Shelbyville" in e.text])

    async with Blackboard.connect(url) as bb:
        # The move as the whole memory recorded it: before it, nobody believed Shelbyville.
        # (The agents run at their own pace: the one that moves second may not have heard
        # of Acme Corp yet at that instant, and then has nothing to say as of then.)
        first_move = await moves([f"agent:{a}" for a in agents] + [f"team:{TEAM}"])
        answered = 0
        for a in agents:
            own_move = await moves([f"agent:{a}"])
            before = instant(own_move - 1)  # as this agent's own memory recorded it
            async with AgentMemory(bb, a, teams=[TEAM]) as mem:
                for scopes in (None, [f"team:{TEAM}"]):
                    hits = await mem.recall(MemoryQuery(query="where is Acme Corp",
                                                        scopes=scopes))
                    first = next(p for h in hits if (p := place(h.entry.text)))
                    assert first == "Shelbyville", (a, scopes, [h.entry.text for h in hits])
                facts = MemoryQuery(lens="facts_about:Acme Corp", max_results=20)
                now = [h for h in await mem.recall(facts) if place(h.entry.text)]
                assert now and place(now[0].entry.text) == "Shelbyville"
                assert all(h.entry.metadata.get("status") != "superseded" for h in now)
                then = await mem.recall(facts.model_copy(
                    update={"as_of": instant(first_move - 1)}))
                said = [place(h.entry.text) for h in then if place(h.entry.text)]
                assert "Shelbyville" not in said, (a, said, first_move, await _versions(
                    bb, [f"agent:{x}:ltm:semantic" for x in agents] + [
                        f"team:{TEAM}:ltm:semantic"]))
                answered += said[:1] == ["Springfield"]
                # its own memory, as of just before its own move: Springfield
                mine = await mem.recall(facts.model_copy(
                    update={"as_of": before, "scopes": [f"agent:{a}:ltm:semantic"]}))
                said = [place(h.entry.text) for h in mine if place(h.entry.text)]
                assert said[:1] == ["Springfield"], (a, said)
                # every form (the team's belief states the agent's sentence: each fact once
                # would fold one into the other), the replaced versions too
                hist = await mem.recall(facts.model_copy(
                    update={"include_history": True, "collapse": False}))
                chains: dict[str, list[Any]] = {}
                for h in hist:
                    if h.entry.key == KEY:
                        chains.setdefault(h.entry.scope, []).append(h.entry)
                # every stored status is true: in each scope only the last version is live
                for scope_chain in chains.values():
                    # in valid time (a batch that moved the fact writes both versions at once)
                    scope_chain.sort(key=lambda e: (int(e.metadata.get("valid_from_ms", 0)),
                                                    e.created_at))
                    assert [e.metadata["status"] == "superseded" for e in scope_chain] == (
                        [True] * (len(scope_chain) - 1) + [False]), [
                        (e.scope, e.text, e.metadata["status"]) for e in scope_chain]
                chain = chains.get(f"agent:{a}:ltm:semantic", [])
                assert chain and place(chain[0].text) == "Springfield"
                # the beliefs view picks the same versions now and as of before the move
                cur = _current(chain, None)
                old = _current(chain, int(before.timestamp() * 1000))
                assert cur is not None and place(cur.text) == "Shelbyville"
                assert old is not None and place(old.text) == "Springfield"
        # the agent that moved first had heard Springfield before (the script says so)
        assert answered >= 1
