"""``blackboard belief confirm|correct`` and the evidence part of ``blackboard check``, as
a user runs them: refusals are one line with the documented exit code (2 bad input, 4
permission, 1 not found), nothing written; a broken evidence link is reported (exit 3)."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from cli_support import cli

from blackboard import Blackboard

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)

BELIEF = {"subject": "Acme Corp", "predicate": "lives_in", "object": "Springfield",
          "negated": False, "statement": "Acme Corp lives in Springfield",
          "canonical_key": "fact:acme-corp:lives_in"}


def _seed(url: str) -> dict[str, str]:
    async def go() -> dict[str, str]:
        async with Blackboard.connect(url) as bb:
            stm = bb.scope("agent:a1:stm")
            gone = await stm.write("Acme Corp lives in Springfield.", author="a1")
            note = await stm.write("a note", author="a1")
            b = await bb.scope("agent:a1:ltm:semantic").write(
                {**BELIEF, "evidence": [{"entry": gone.id, "stance": "support"}]},
                tags={"fact"}, key=BELIEF["canonical_key"],
                metadata={"canonical_key": BELIEF["canonical_key"]})
            await stm.delete(gone.id)  # as dedupe would: the bare legacy link now dangles
            return {"belief": b.id, "note": note.id, "gone": gone.id}

    return asyncio.run(go())


def _stm(url: str) -> int:
    async def go() -> int:
        async with Blackboard.connect(url) as bb:
            return await bb.scope("agent:a1:stm").count()

    return asyncio.run(go())


def test_belief_feedback_and_evidence_check(redis_url: str, clean_redis: redis.Redis) -> None:
    ids = _seed(redis_url)
    before = _stm(redis_url)
    assert "not a belief" in cli("belief", "correct", ids["note"], "x", "--agent", "a1",
                                 url=redis_url).one_line_error(2)  # bad input: usage
    assert "may not read scope" in cli("belief", "confirm", ids["belief"], "--agent", "a2",
                                       "--scope", "agent:a1:ltm:semantic",
                                       url=redis_url).one_line_error(4)  # permission
    assert "no belief" in cli("belief", "confirm", ids["belief"], "--agent", "a2",
                              url=redis_url).one_line_error(1)
    assert "claim:" in cli("belief", "correct", ids["belief"], "Globex lives in Paris",
                           "--agent", "a1", url=redis_url).one_line_error(2)
    assert _stm(redis_url) == before  # nothing written by a refusal
    r = cli("belief", "correct", ids["belief"], "Shelbyville", "--agent", "a1", "--json",
            url=redis_url)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["author"] == "a1" and out["statement"] == "Acme Corp lives in Shelbyville"

    r = cli("check", "--json", url=redis_url)
    assert r.code == 3, (r.out, r.err)
    ev = json.loads(r.out)["evidence"]
    assert ev["links"]["broken"] == 1 and ev["broken"][0]["entry"] == ids["gone"]
    r = cli("check", url=redis_url, columns=200)
    assert f"cites {ids['gone']!r}" in r.out and r.code == 3
