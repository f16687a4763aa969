"""procedural: one procedure per skill, variants, folded sub-sequences, split tasks,
support, success rate, versions."""

from __future__ import annotations

import random
from typing import TypeVar

import pytest
from pydantic import BaseModel, ValidationError

from blackboard.entry import Entry
from consolidation import Draft, TransformContext, get_transformer
from tests.consolidation.cons_support import T0, make_entry

M = TypeVar("M", bound=BaseModel)


def _task(tid: str, kind: str, actions: list[str], outcome: str | None, start: int) -> list[Entry]:
    es = [
        make_entry(
            f"{tid}-{i}",
            f"do {a}",
            at=start + i,
            tags={f"task:{tid}", f"task_kind:{kind}", f"action_type:{a}"},
        )
        for i, a in enumerate(actions)
    ]
    if outcome:
        es.append(
            make_entry(f"{tid}-end", "done", at=start + len(actions), tags={f"task:{tid}", outcome})
        )
    return es


def _batch() -> list[Entry]:
    return (
        _task("t1", "deploy", ["build", "test", "deploy"], "success", 0)
        + _task("t2", "deploy", ["build", "test", "deploy"], "failure", 10)
        + _task("t3", "deploy", ["checkout", "build", "test", "deploy"], "success", 20)
        + _task("t4", "report", ["build", "test"], "success", 30)
        + [make_entry("loose", "no task", at=40, tags={"action_type:build"})]
    )


CTX = TransformContext("edge-proc", "agent:a1:ltm:procedural", now_ms=T0)


def _held(d: Draft, eid: str) -> Entry:
    """The entry a draft becomes once written (what the next batch reads back)."""
    return Entry(id=eid, scope=CTX.target_scope, value=d.value, key=d.key,
                 metadata=dict(d.metadata), source=d.sources)


async def test_one_procedure_per_kind_with_variants() -> None:
    out = await get_transformer("procedural")(_batch(), CTX)
    assert [d.key for d in out] == ["procedure:deploy", "procedure:report"]
    v = out[0].value
    assert v["status"] == "learned" and v["steps"] == ["build", "test", "deploy"]
    assert v["tasks"] == ["t1", "t2", "t3"]
    assert (v["support"], v["successes"], v["failures"]) == (3, 2, 1)
    assert v["success_rate"] == round(2 / 3, 6) and v["procedure_version"] == 1
    # the longer run is not folded into (nor absorbs) the more common one: a variant
    assert [(x["steps"], x["support"]) for x in v["variants"]] == [
        (["build", "test", "deploy"], 2),
        (["checkout", "build", "test", "deploy"], 1),
    ]
    assert out[0].supersedes is None and "loose" not in out[0].sources
    assert "t2-end" in out[0].sources
    # one task of kind "report": not learned yet, but kept (its runs go on)
    assert out[1].value["status"] == "candidate" and "candidate" in out[1].tags


async def test_subsequence_folds_into_the_procedure() -> None:
    batch = _batch() + _task("t5", "deploy", ["build", "test"], "failure", 50)
    [d, _] = await get_transformer("procedural")(batch, CTX)
    v = d.value
    assert (v["support"], v["successes"], v["failures"], v["success_rate"]) == (4, 2, 2, 0.5)
    assert [(x["steps"], x["support"], x["success_rate"]) for x in v["variants"]] == [
        (["build", "test", "deploy"], 3, round(1 / 3, 6)),
        (["checkout", "build", "test", "deploy"], 1, 1.0),
    ]


async def test_version_grows_with_existing_procedure() -> None:
    old = Entry(
        id="p-old",
        scope="agent:a1:ltm:procedural",
        value={"runs": {"t0": {"steps": ["build", "test", "deploy"], "outcome": "success"}},
               "retired": {"support": 3, "successes": 3, "failures": 0}},
        key="procedure:deploy",
        metadata={"support": 4, "successes": 4, "failures": 0, "procedure_version": 2},
    )
    ctx = TransformContext(
        "edge-proc", "agent:a1:ltm:procedural", existing={old.key or "": old}, now_ms=T0
    )
    d = (await get_transformer("procedural")(_batch(), ctx))[0]
    v = d.value
    assert (v["support"], v["successes"], v["failures"], v["procedure_version"]) == (7, 6, 1, 3)
    assert v["variants"][0]["support"] == 3 and d.supersedes == "p-old"


async def test_a_task_split_over_two_batches_is_one_run() -> None:
    t1 = _task("t1", "deploy", ["build", "test", "deploy"], "failure", 0)
    t2 = _task("t2", "deploy", ["build", "test", "deploy"], "success", 10)
    proc = get_transformer("procedural")
    [first] = await proc(t1 + t2[:1], CTX)  # t2 cut after its first step
    assert first.value["runs"]["t2"] == {"steps": ["build"], "outcome": "unknown"}
    held = _held(first, "p1")
    ctx = TransformContext(CTX.edge, CTX.target_scope, existing={"procedure:deploy": held},
                           now_ms=T0)
    [second] = await proc(t2[1:], ctx)
    v = second.value
    assert v["runs"]["t2"] == {"steps": ["build", "test", "deploy"], "outcome": "success"}
    assert [(x["steps"], x["support"]) for x in v["variants"]] == [(["build", "test", "deploy"], 2)]
    assert (v["support"], v["successes"], v["failures"]) == (2, 1, 1)
    assert second.supersedes == "p1" and set(second.sources) == {e.id for e in t2[1:]}


async def test_procedural_deterministic_under_shuffle() -> None:
    a = await get_transformer("procedural")(_batch(), CTX)
    b = _batch()
    random.Random(9).shuffle(b)
    assert await get_transformer("procedural")(b, CTX) == a


class _Namer:
    """A scripted LLM naming the mined procedures: one note per index in ``notes``."""

    model = "namer-1"

    def __init__(self, notes: list[dict[str, object]]) -> None:
        self.notes = notes
        self.users: list[str] = []
        self.schemas: list[type[BaseModel]] = []

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        self.users.append(user)
        self.schemas.append(schema)
        return schema.model_validate({"procedures": self.notes})


async def test_llm_names_learned_procedures_only() -> None:
    batch = _batch() + _task("t5", "deploy", ["build", "test"], "failure", 50)
    namer = _Namer([{"index": 0, "name": "Ship it", "description": "Build, test, deploy."}])
    ctx = TransformContext("edge-proc", "agent:a1:ltm:procedural", llm=namer, now_ms=T0)
    out = await get_transformer("procedural")(batch, ctx)
    # only learned procedures are named (report's is a candidate)
    assert namer.users == ["[0] task kind deploy: build -> test -> deploy"]
    assert [(d.value["name"], d.value["description"]) for d in out] == [
        ("Ship it", "Build, test, deploy."),
        (None, None),
    ]
    assert {d.provenance.model for d in out} == {"namer-1"}
    assert all(d.tags >= {"procedure", "task_kind:deploy", "action_type:build"} for d in out[:1])
    # The schema admits only the listed procedures, one note each: a note for another is
    # invalid output (repaired, then the DLQ), not quietly dropped.
    [schema] = namer.schemas
    sent = schema.model_json_schema()
    index = sent["$defs"]["ProcedureNote"]["properties"]["index"]
    assert index.get("enum", [index.get("const")]) == [0]  # one value: a const
    assert sent["properties"]["procedures"]["maxItems"] == 1
    ghost = {"index": 7, "name": "Ghost", "description": "No such procedure."}
    with pytest.raises(ValidationError, match=r"procedures\.0\.index"):
        schema.model_validate({"procedures": [ghost]})


async def test_no_llm_call_without_learned_procedures() -> None:
    namer = _Namer([])
    ctx = TransformContext("e", "s", llm=namer, now_ms=T0)
    [d] = await get_transformer("procedural")(_task("t1", "k", ["a"], None, 0), ctx)
    assert d.value["status"] == "candidate" and d.value["steps"] == []
    assert namer.users == []


async def test_old_runs_retire_into_the_tally() -> None:
    from consolidation.procedural import MAX_RUNS

    runs = {f"old{i:03d}": {"steps": ["build", "test", "deploy"], "outcome": "success"}
            for i in range(MAX_RUNS)}
    old = Entry(id="p-old", scope="s", value={"runs": runs}, key="procedure:deploy",
                metadata={"procedure_version": 5})
    ctx = TransformContext("e", "s", existing={"procedure:deploy": old}, now_ms=T0)
    d = (await get_transformer("procedural")(_batch(), ctx))[0]
    v = d.value
    # three new tasks: the three seen longest ago retire, still counted
    assert len(v["runs"]) == MAX_RUNS and "old000" not in v["runs"] and "t3" in v["runs"]
    assert v["retired"] == {"support": 3, "successes": 3, "failures": 0}
    assert (v["support"], v["successes"], v["failures"]) == (MAX_RUNS + 3, MAX_RUNS + 2, 1)
