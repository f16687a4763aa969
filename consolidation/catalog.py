"""The consolidation layer's answer to memory's transformer catalog (memory.catalog).

Memory validates edges against the transformer names and installs the default edges, but
must not import this layer; it loads :data:`catalog` through the
``blackboard.transformer_catalog`` entry point declared in pyproject.toml instead.

The default edges name transformers by their registered objects' ``name`` (the one place
each name is written) and scopes by level: a transformer named like a level (``episodic``)
is a different fact from the level (:class:`memory.MemoryLevel`) it happens to feed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memory.levels import MemoryLevel
from memory.naming import COLLECTIVE, agent_scope, team_scope
from memory.subscriptions import MemorySubscription, TagMatch, Trigger

from .collective import collective_beliefs
from .collective_procedures import collective_procedures
from .episodic import episodic
from .feedback import read_claim
from .procedural import procedural
from .semantic import semantic
from .summarize import summarize
from .team import team
from .team_beliefs import team_beliefs
from .toc import timeline
from .transformer import identity, transformer_names

__all__ = ["ConsolidationCatalog", "catalog", "default_edges"]


def default_edges(agent_id: str, teams: Iterable[str] = ()) -> list[MemorySubscription]:
    """The default dataflow: sensory -> working -> stm (steps kept, and summaries) ->
    {episodic, semantic, procedural} from the steps, every agent's beliefs and procedures
    -> ``collective``, the tables of contents of ltm:episodic and stm (``timeline``), the
    agent's stm summaries and stated facts -> each team's root scope, and the agent's
    beliefs -> each team's semantic scope. Triggers: counts with a time bound.

    Per-agent edges are patterns (``agent:*:working -> agent:{1}:stm``) shared by every
    agent, so workers match each event against a handful of edges, not one set per agent;
    only the agent -> team edges are concrete (they depend on membership)."""
    every_hour = Trigger.any_of(Trigger.count(50), Trigger.timer(3600))
    steps = TagMatch.of(none_of={"summary"})
    edges = [
        MemorySubscription("agent:*:sensory", "agent:{1}:working", identity.name,
                           trigger=Trigger.count(1)),
        # Working memory is capped and short-lived: its steps are kept in stm as they are
        # (identity) and condensed (summarize); the long-term transformers read the steps.
        MemorySubscription("agent:*:working", "agent:{1}:stm", identity.name,
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(60))),
        MemorySubscription("agent:*:working", "agent:{1}:stm", summarize.name,
                           params={"budget": 200},
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(600))),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:episodic", episodic.name,
                           filter=steps, trigger=every_hour),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:semantic", semantic.name,
                           filter=steps, trigger=every_hour),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:procedural", procedural.name,
                           filter=steps, trigger=every_hour),
        # Collective memory (consolidation.collective): what several agents hold, pooled
        # from every agent's beliefs and procedures into one system-wide scope, a minute
        # after one changes. Pattern edges, like the per-agent ones: installed once.
        MemorySubscription("agent:*:ltm:semantic", COLLECTIVE, collective_beliefs.name,
                           filter=TagMatch.of(all_of={"fact"}),
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(60))),
        MemorySubscription("agent:*:ltm:procedural", COLLECTIVE, collective_procedures.name,
                           filter=TagMatch.of(all_of={"procedure"}),
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(60))),
        # Tables of contents (consolidation.toc): the agent's conversations and episodes,
        # and the steps kept in stm. The target only names the buffer (an edge may not
        # feed its own source); the timeline role writes into each source scope's table.
        MemorySubscription("agent:*:ltm:episodic", "agent:{1}:toc", timeline.name,
                           trigger=Trigger.any_of(Trigger.count(100), Trigger.age(5))),
        MemorySubscription("agent:*:stm", "agent:{1}:toc", timeline.name, filter=steps,
                           trigger=Trigger.any_of(Trigger.count(100), Trigger.age(5))),
    ]
    for t in sorted(set(teams)):
        # The team pools its members' summaries (consolidation.team keys each by its
        # content) and the facts they stated, each keyed by the slot it states
        # (consolidation.team_statements): the same statement from several members is
        # one entry, and a newer contrary one supersedes it, so an outdated statement
        # never competes with the current one in a recall of the team's root scope.
        # Their beliefs reconcile in the team's semantic scope (below).
        edges.append(MemorySubscription(
            agent_scope(agent_id, MemoryLevel.STM), team_scope(t), team.name,
            filter=TagMatch.of(any_of={"summary", "fact"}),
            trigger=Trigger.any_of(Trigger.count(20), Trigger.timer(600)),
        ))
        # Agents reconcile: every member's beliefs (their raw evidence) -> one team belief
        # per canonical key (consolidation.team_beliefs), a minute after a belief changes.
        edges.append(MemorySubscription(
            agent_scope(agent_id, MemoryLevel.SEMANTIC), team_scope(t, MemoryLevel.SEMANTIC),
            team_beliefs.name, filter=TagMatch.of(all_of={"fact"}),
            trigger=Trigger.any_of(Trigger.count(20), Trigger.age(60)),
        ))
    return edges


class ConsolidationCatalog:
    """:class:`memory.catalog.TransformerCatalog` over this layer's transformer registry:
    a transformer registered later (``register_transformer``) is a valid edge name at once."""

    def transformer_names(self) -> list[str]:
        return transformer_names()

    def default_edges(self, agent_id: str, teams: Iterable[str] = ()) -> list[MemorySubscription]:
        return default_edges(agent_id, teams)

    def read_claim(self, belief: Mapping[str, Any], claim: str) -> dict[str, Any] | None:
        """The triple a correction asserts (:func:`consolidation.feedback.read_claim`)."""
        return read_claim(belief, claim)


#: The object the entry point names.
catalog = ConsolidationCatalog()
