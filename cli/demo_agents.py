"""Scripted agents for the demo: deterministic work with actions, outcomes, facts and plans.

No LLM: each agent runs tasks of a few kinds, each kind a usual sequence of actions with
seeded variations and failures, and now and then states a fact it observed. One fact
changes mid-run (a supplier moves), so semantic memory must supersede a belief.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["PROCEDURES", "Step", "script"]

#: The usual action sequence of each task kind (what procedural memory should learn).
PROCEDURES: dict[str, tuple[str, ...]] = {
    "invoice": ("fetch_email", "extract_fields", "validate_totals", "post_ledger"),
    "reconcile": ("load_ledger", "match_payments", "flag_mismatch", "write_report"),
    "support": ("read_ticket", "search_kb", "draft_reply", "send_reply"),
}

FACTS_EARLY = (
    "Acme Corp uses net-30 payment terms.",
    "Globex prefers email invoices.",
    "Initech has a dedicated billing portal.",
    "Acme Corp lives in Springfield.",
)
FACTS_LATE = ("Acme Corp lives in Shelbyville.",)


@dataclass(frozen=True, slots=True)
class Step:
    """One thing an agent does: an action (with outcome) or an observation."""

    agent: str
    kind: str  # "action" | "observation" | "plan"
    text: str
    tags: frozenset[str] = field(default_factory=frozenset)
    action: str | None = None
    ok: bool = True


def script(agent: str, steps: int, seed: int) -> Iterator[Step]:
    """The agent's steps, deterministic for (agent, steps, seed)."""
    rnd = random.Random(f"{agent}:{seed}")
    n = task_no = 0
    moved = False
    while n < steps:
        task_no += 1
        kind = rnd.choice(sorted(PROCEDURES))
        task = f"{agent}-{kind}-{task_no}"
        session = f"s{1 + (n * 4) // max(steps, 1)}"
        base = {f"task:{task}", f"task_kind:{kind}", f"session:{session}", f"agent:{agent}"}
        yield Step(agent, "plan", f"{agent} plans {kind} task {task}.", frozenset(base | {"plan"}))
        n += 1
        actions = list(PROCEDURES[kind])
        if rnd.random() < 0.2:  # an occasional detour keeps the miner honest
            actions.insert(rnd.randrange(1, len(actions)), "ask_human")
        for i, act in enumerate(actions):
            last = i == len(actions) - 1
            ok = not (last and rnd.random() < 0.15)
            yield Step(
                agent,
                "action",
                f"{agent} ran {act} for {task}: {'done' if ok else 'failed'}.",
                frozenset(base),
                action=act,
                ok=ok,
            )
            n += 1
        late = n >= steps * 0.6
        if rnd.random() < 0.5 or (late and not moved):
            # Every agent sees the move once late in its run: a belief must change.
            fact = (
                FACTS_LATE[0]
                if late and not moved
                else rnd.choice(FACTS_EARLY[:3] if late else FACTS_EARLY)
            )
            moved = moved or fact in FACTS_LATE
            yield Step(agent, "observation", fact, frozenset(base | {"observation", "fact"}))
            n += 1
