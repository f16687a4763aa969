"""``collective_beliefs`` (every agent's ltm:semantic -> ``collective``): what several
agents agree on becomes collective memory. The quorum rule shared with
:mod:`.collective_procedures` lives here too.

A collective belief is a team belief (:mod:`.team_beliefs`: one current view per agent,
drawn from the raw evidence its belief's links cite; the claim most agents hold wins;
confidence, pooled evidence links and valid time as there) over every agent of the
system, with one rule more, the **quorum**: its claim is offered as collective truth only
while at least ``quorum`` agents' current views hold it. Default 2: the fewest that make
agreement. One agent's belief is already in its own memory; with 2, no single agent (a
view counts once, and an agent can forge only its own) writes collective truth alone, and
a deployment of two agents still gets a collective; 3 would leave it empty.

Below the quorum the entry is written all the same, status ``proposed`` and metadata
``promoted: false`` (tag ``proposed``): it carries the agents' views to the next batch
(another agent's belief arrives later, from another partition), and recall never offers
it as truth, now or ``as_of`` (:func:`retrieval.truth.below_quorum`).

How a version's ``revision`` reads: ``new``; ``reinforced`` / ``contested`` (the same
claim, more views); ``changed`` (another claim won: the old one's valid time ends);
``promoted`` (the claim reached the quorum) and ``demoted`` (its agents fell below it:
one changed its mind), both valid from the newest view, so ``as_of`` before a promotion
finds no collective truth, and a superseded or outvoted belief never stays collective
truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from blackboard import Entry

from .draft import Draft
from .params import parse_params
from .team_beliefs import TeamBeliefParams, TeamBeliefsTransformer, belief_groups
from .transformer import TransformContext, register_transformer

__all__ = [
    "COLLECTIVE_TAG",
    "PROPOSED",
    "CollectiveBeliefsTransformer",
    "CollectiveParams",
    "collective_beliefs",
    "promotion",
]

#: Tag of every collective entry (beliefs and procedures).
COLLECTIVE_TAG = "collective"
#: Status (and tag) of a collective entry held by fewer agents than its quorum.
PROPOSED = "proposed"


@dataclass(frozen=True, slots=True)
class CollectiveParams:
    """``quorum``: agents whose current view must hold a claim (or who must have learned a
    procedure) for the collective to hold it; ``half_life_days`` and ``max_links`` as in
    :class:`.team_beliefs.TeamBeliefParams`."""

    quorum: int = 2
    half_life_days: float = 30.0
    max_links: int = 48

    def __post_init__(self) -> None:
        if self.quorum < 1:
            raise ValueError("quorum must be at least 1")
        self.team()  # the team's own checks of the rest

    def team(self) -> TeamBeliefParams:
        return TeamBeliefParams(self.half_life_days, self.max_links)


def promotion(existing: Entry | None, met: bool, revision: str, since: int,
              newest: int) -> tuple[str, int]:
    """A collective version's ``revision`` and valid-from time, given whether it meets its
    quorum (``met``), the revision and valid-from its content alone gives, and the time of
    the newest view: crossing the quorum either way is a revision of its own, valid from
    then (a changed claim stays ``changed``: the old claim's valid time ends there)."""
    if existing is None or revision == "changed":
        return revision, since
    was = existing.metadata.get("promoted") is True
    if met == was:
        return revision, since
    return ("promoted" if met else "demoted"), max(since, newest)


def collective_form(value: Mapping[str, Any], metadata: Mapping[str, Any],
                    tags: frozenset[str], met: bool, quorum: int, revision: str,
                    since: int, live: str) -> tuple[dict[str, Any], dict[str, Any],
                                                    frozenset[str]]:
    """``value``, ``metadata`` and ``tags`` of a collective version: its status (``live``
    when the quorum is met, else :data:`PROPOSED`), the quorum and its revision."""
    status = live if met else PROPOSED
    common = {"status": status, "revision": revision, "valid_from_ms": since,
              "quorum": quorum}
    v = {**value, **common}
    m = {**{k: x for k, x in metadata.items() if k != "team_belief"}, **common,
         "collective": True, "promoted": met}
    t = {*(x for x in tags if x not in ("team_belief", PROPOSED)), COLLECTIVE_TAG}
    return v, m, frozenset(t | ({PROPOSED} if not met else set()))


class CollectiveBeliefsTransformer(TeamBeliefsTransformer):
    """Runs in the ``collective`` role. One edge (``agent:*:ltm:semantic -> collective``)
    buffers in every partition: its firings into ``collective`` take turns
    (:mod:`workers.target_turn`), as a team's members' do."""

    name = "collective_beliefs"
    version = "1"
    one_target_at_a_time = True

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(CollectiveParams, ctx.params, self.name)
        out = []
        for key, beliefs in belief_groups(batch):
            d = self._draft(key, beliefs, ctx, p.team())
            if d is not None:
                out.append(self._collective(d, ctx.existing.get(key), p.quorum))
        return out

    @staticmethod
    def _collective(d: Draft, existing: Entry | None, quorum: int) -> Draft:
        """The team-shaped draft ``d`` as a collective version (see the module)."""
        met = len(d.metadata["agents"]) >= quorum
        newest = max(int(v["at"]) for v in d.metadata["views"].values())
        revision, since = promotion(existing, met, str(d.value["revision"]),
                                    int(d.metadata["valid_from_ms"]), newest)
        value, meta, tags = collective_form(d.value, d.metadata, d.tags, met, quorum,
                                            revision, since, "active")
        return replace(d, value=value, metadata=meta, tags=tags)


collective_beliefs = register_transformer(CollectiveBeliefsTransformer(), role="collective")
