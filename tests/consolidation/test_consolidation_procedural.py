"""procedural: mined sequences, support, success rate, versions."""

from __future__ import annotations

import random
from typing import TypeVar

from pydantic import BaseModel

from blackboard.entry import Entry
from consolidation import TransformContext, get_transformer
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


async def test_mines_closed_frequent_sequence() -> None:
    out = await get_transformer("procedural")(_batch(), CTX)
    # (build,test) and (test,deploy) have the same support (3) as (build,test,deploy),
    # so only the closed pattern is kept; (checkout,...) occurs once; kind "report" once.
    assert [d.key for d in out] == ["procedure:deploy:build,test,deploy"]
    v = out[0].value
    assert v["steps"] == ["build", "test", "deploy"] and v["tasks"] == ["t1", "t2", "t3"]
    assert (v["support"], v["successes"], v["failures"]) == (3, 2, 1)
    assert v["success_rate"] == round(2 / 3, 6) and v["procedure_version"] == 1
    assert out[0].supersedes is None and "loose" not in out[0].sources
    assert "t2-end" in out[0].sources


async def test_subsequence_with_more_support_is_kept() -> None:
    batch = _batch() + _task("t5", "deploy", ["build", "test"], "failure", 50)
    out = await get_transformer("procedural")(batch, CTX)
    got = {d.key: (d.value["support"], d.value["success_rate"]) for d in out}
    assert got == {
        "procedure:deploy:build,test": (4, 0.5),
        "procedure:deploy:build,test,deploy": (3, round(2 / 3, 6)),
    }


async def test_version_grows_with_existing_procedure() -> None:
    old = Entry(
        id="p-old",
        scope="agent:a1:ltm:procedural",
        value={},
        key="procedure:deploy:build,test,deploy",
        metadata={"support": 4, "successes": 4, "failures": 0, "procedure_version": 2},
    )
    ctx = TransformContext(
        "edge-proc", "agent:a1:ltm:procedural", existing={old.key or "": old}, now_ms=T0
    )
    [d] = await get_transformer("procedural")(_batch(), ctx)
    v = d.value
    assert (v["support"], v["successes"], v["failures"], v["procedure_version"]) == (7, 6, 1, 3)
    assert d.supersedes == "p-old"


async def test_known_procedure_updated_below_min_support() -> None:
    old = Entry(
        id="p-rep",
        scope="s",
        value={},
        key="procedure:report:build,test",
        metadata={"support": 3, "successes": 3, "failures": 0, "procedure_version": 1},
    )
    ctx = TransformContext("e", "s", existing={"procedure:report:build,test": old}, now_ms=T0)
    out = await get_transformer("procedural")(_batch(), ctx)
    rep = [d for d in out if d.key == "procedure:report:build,test"]
    assert len(rep) == 1 and rep[0].value["support"] == 4 and rep[0].value["procedure_version"] == 2


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

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        self.users.append(user)
        return schema.model_validate({"procedures": self.notes})


async def test_llm_names_procedures_and_out_of_range_notes_are_dropped() -> None:
    batch = _batch() + _task("t5", "deploy", ["build", "test"], "failure", 50)
    namer = _Namer(
        [
            {"index": 1, "name": "Ship it", "description": "Build, test, deploy."},
            {"index": 7, "name": "Ghost", "description": "No such procedure."},
        ]
    )
    ctx = TransformContext("edge-proc", "agent:a1:ltm:procedural", llm=namer, now_ms=T0)
    out = await get_transformer("procedural")(batch, ctx)
    assert namer.users == [
        "[0] task kind deploy: build -> test\n[1] task kind deploy: build -> test -> deploy"
    ]
    assert [(d.value["name"], d.value["description"]) for d in out] == [
        (None, None),
        ("Ship it", "Build, test, deploy."),
    ]
    assert {d.provenance.model for d in out} == {"namer-1"}
    assert all(d.tags >= {"procedure", "task_kind:deploy", "action_type:build"} for d in out)


async def test_no_llm_call_without_patterns() -> None:
    namer = _Namer([])
    ctx = TransformContext("e", "s", llm=namer, now_ms=T0)
    assert await get_transformer("procedural")(_task("t1", "k", ["a"], None, 0), ctx) == []
    assert namer.users == []
