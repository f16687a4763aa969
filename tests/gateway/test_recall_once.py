"""Each fact once, end to end (issue 31): the README's gateway example (``curl`` stores
"Acme pays net-30") and its RemoteMemory example, run as the README has them against a
real gateway process while a real worker (``--role all``) consolidates them into stm
copies, a summary, a team copy, an episode and a belief. Then the RemoteMemory example
again: right after its write, and once that write is consolidated too, no sentence shows
twice in the top 8 and the entry just written comes first; ``collapse=False`` (REST, MCP,
RemoteMemory) gives every form back, and a bad value is a 422 naming the field."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Sequence
from typing import Any

import pytest

import memory.remote
from blackboard import Entry
from memory import MemoryQuery, ScoredEntry
from memory.registry import Registry
from memory.subscriptions import Trigger
from retrieval.collapse import statement_words
from retrieval.text import entry_text
from tests.gateway.dashboard_support import worker
from tests.gateway.gateway_support import ROOT, GatewayProc, run_async
from tests.gateway.test_mcp import mcp_client, ok, refused

#: Consolidate within a second instead of the defaults' minutes.
FAST = Trigger.any_of(Trigger.count(20), Trigger.age(1.0))
SENTENCES = ("Acme pays net-30", "Acme uses net-30 terms")
DERIVED = ("agent:a1:stm", "agent:a1:ltm:semantic", "agent:a1:ltm:episodic", "team:ops")


def readme_example() -> str:
    """The README's RemoteMemory example, verbatim but for its last line (which runs
    ``main`` on a token from the environment), with ``example`` naming its ``main``."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```python\n((?:(?!```).)*?from memory\.remote import RemoteMemory\n.*?)```",
                  text, re.S)
    assert m, "the README's RemoteMemory example is gone"
    body = [ln for ln in m.group(1).splitlines() if not ln.startswith("asyncio.run(")]
    assert any(ln.startswith("async def main(token") for ln in body), m.group(1)
    return "\n".join(body) + "\nexample = main\n"


class Recording(memory.remote.RemoteMemory):
    """RemoteMemory keeping what the example stored and recalled."""

    stored: list[Entry] = []
    recalled: list[list[ScoredEntry]] = []

    async def store(self, *a: Any, **kw: Any) -> Entry:  # type: ignore[override]
        e = await super().store(*a, **kw)
        Recording.stored.append(e)
        return e

    async def recall(self, *a: Any, **kw: Any) -> list[ScoredEntry]:
        hits = await super().recall(*a, **kw)
        Recording.recalled.append(hits)
        return hits


def run_readme(gw: GatewayProc, token: str) -> tuple[Entry, list[ScoredEntry]]:
    """Run the README example once; -> the entry it stored and the hits it printed."""
    ns: dict[str, Any] = {}
    exec(readme_example().replace("http://localhost:8080", gw.url), ns)
    run_async(lambda: ns["example"](token))
    return Recording.stored[-1], Recording.recalled[-1]


def times_said(hits: Sequence[ScoredEntry], sentence: str) -> int:
    """How many of ``hits`` hold ``sentence`` (word for word, in any field)."""
    w = statement_words(sentence)
    return sum(w in statement_words(entry_text(h.entry)) for h in hits)


def wait_consolidated(gw: GatewayProc, want: dict[str, int], limit_s: float = 50) -> None:
    async def go() -> None:
        async with gw.admin() as bb:
            t0 = time.monotonic()
            while True:
                got = {s: await bb.scope(s).count() for s in want}
                if all(got[s] >= n for s, n in want.items()):
                    return
                assert time.monotonic() - t0 < limit_s, f"not consolidated: {got} < {want}"
                await asyncio.sleep(0.3)

    run_async(go)


def fast_edges(gw: GatewayProc) -> None:
    async def go() -> None:
        async with gw.admin() as bb:
            reg = Registry(bb)
            for e in await reg.list_edges():
                await reg.save_edge(dataclasses.replace(e, trigger=FAST))

    run_async(go)


def assert_each_sentence_once(hits: Sequence[ScoredEntry], new: Entry) -> None:
    top = hits[:8]
    assert top[0].entry.id == new.id, [h.entry.text for h in top]
    for s in SENTENCES:  # the older sentence is there when it clears the relevance floor
        assert times_said(top, s) <= 1, (s, [(h.scope, h.entry.text) for h in top])
    assert times_said(top, new.text) == 1
    texts = [" ".join(h.entry.text.casefold().split()) for h in top]
    assert len(texts) == len(set(texts))


def test_the_readme_remote_example_shows_each_fact_once(
        gateway: GatewayProc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory.remote, "RemoteMemory", Recording)
    token = gateway.token("a1", ["ops"])  # as `blackboard token create --agent a1 --team ops`
    fast_edges(gateway)
    with gateway.client(token) as c:  # the README's curl
        r = c.post("/v1/memories", json={"value": "Acme pays net-30", "tags": ["fact"]})
        assert r.status_code == 201, r.text
    run_readme(gateway, token)
    with worker(gateway):
        # copies of both steps and their summary in stm, the belief, the episode, the
        # summary's team copy
        wait_consolidated(gateway, dict(zip(DERIVED, (3, 1, 1, 1), strict=True)))

        # The state of the issue: the example run again right after its write.
        new, hits = run_readme(gateway, token)
        assert_each_sentence_once(hits, new)
        # every form is still there, named by id and scope, in the fact's hit
        scopes = {r.scope for h in hits for r in h.also_in}
        assert set(DERIVED) <= scopes | {h.scope for h in hits}
        assert len(hits[0].also_in) >= 5

        async def every_form() -> list[ScoredEntry]:
            async with memory.remote.RemoteMemory(gateway.url, token) as m:
                return await m.recall(MemoryQuery(query="payment terms", collapse=False))

        every = run_async(every_form)
        assert times_said(every[:8], SENTENCES[1]) >= 5  # what the issue saw
        assert all(not h.also_in for h in every)

        with gateway.client(token) as c:
            body = c.post("/v1/recall", json={"query": "payment terms"}).json()
            assert {"id", "scope"} == set(body["hits"][0]["also_in"][0])
            for bad in ("no", 1, None):
                r = c.post("/v1/recall", json={"query": "payment terms", "collapse": bad})
                assert r.status_code == 422 and r.json()["field"] == "collapse", r.text

        async def mcp() -> tuple[Any, Any, str]:
            async with mcp_client(gateway, token) as m:
                one = ok(await m.call_tool("recall", {"query": "payment terms"}))
                every = ok(await m.call_tool("recall", {"query": "payment terms",
                                                        "collapse": False}))
                bad = refused(await m.call_tool("recall", {"query": "payment terms",
                                                           "collapse": "no"}))
                return one, every, bad

        one, every_mcp, bad = run_async(mcp)
        assert one["memories"][0]["id"] == new.id and one["memories"][0]["also_in"]
        assert len(every_mcp["memories"]) > len(one["memories"])
        assert "collapse" in bad

        # Once the new write is consolidated as well: still each sentence once, new first.
        wait_consolidated(gateway, {"agent:a1:stm": 5})
        new2, hits = run_readme(gateway, token)
        assert_each_sentence_once(hits, new2)
