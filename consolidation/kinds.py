"""Belief kinds and subject types, assigned by code, and the canonical key that carries
them (the LLM path may name a kind: it sets the belief's cadence, not its key).

Kinds (each with its revalidation cadence, :data:`retrieval.truth.CADENCE_DAYS`):
``operator_preference``, ``project_state``, ``world_fact``, ``self_model``,
``relationship_fact``, ``tooling_state``. Subject types: ``entity``, ``project``, ``tool``,
``agent``, ``global``. Rules, first match wins, on the fact's slugs:

1. the subject is an agent (the writing agent, or ``agent``/``assistant``/``self``):
   ``self_model`` about an ``agent``;
2. the predicate is ``prefers``: ``operator_preference`` (``entity``);
3. a project word in subject or object (project, release, launch, sprint, milestone,
   roadmap, repo, version, deadline): ``project_state`` (``project``);
4. a tool word in the subject (api, bot, server, database, service, webhook, pipeline,
   cluster, tool, app, ...), or the predicate ``uses``: ``tooling_state`` (``tool`` when
   the subject is the tool, else ``entity``);
5. a relation word in the object (partner, friend, wife, manager, colleague, ...):
   ``relationship_fact`` (``entity``);
6. otherwise ``world_fact``, about an ``entity`` (``global`` for everyone/world/global).
"""

from __future__ import annotations

from dataclasses import replace

from retrieval.belief_keys import KINDS, SUBJECT_TYPES, BeliefKey

from .facts import DEFAULT_FUNCTIONAL, Fact, key_rest

__all__ = ["KINDS", "SUBJECT_TYPES", "canonical_key", "classify"]

_SELF = frozenset({"agent", "assistant", "self", "the-agent"})
_PROJECT = frozenset({"project", "release", "launch", "sprint", "milestone", "roadmap", "repo",
                      "version", "deadline"})
_TOOL = frozenset({"api", "bot", "server", "database", "db", "service", "webhook", "pipeline",
                   "cluster", "tool", "app", "cli", "sdk", "library", "redis", "postgres",
                   "docker", "kubernetes", "k8s", "queue", "cache"})
_RELATION = frozenset({"partner", "friend", "wife", "husband", "brother", "sister", "mother",
                       "father", "son", "daughter", "manager", "boss", "colleague", "mentor",
                       "teammate", "cousin", "client", "customer", "supplier"})
_GLOBAL = frozenset({"everyone", "everybody", "world", "global"})


def _words(slug: str) -> set[str]:
    return set(slug.split("-"))


def classify(fact: Fact) -> tuple[str, str]:
    """``(kind, subject_type)`` of ``fact`` by the rules of the module doc."""
    subj, obj = _words(fact.subject_key), _words(fact.object_key)
    if fact.subject_key in _SELF or (fact.agent is not None and fact.subject_key == fact.agent):
        return "self_model", "agent"
    if fact.predicate == "prefers":
        return "operator_preference", "entity"
    if (subj | obj) & _PROJECT:
        return "project_state", "project"
    if subj & _TOOL:
        return "tooling_state", "tool"
    if fact.predicate == "uses":
        return "tooling_state", "entity"
    if obj & _RELATION:
        return "relationship_fact", "entity"
    return "world_fact", "global" if subj & _GLOBAL else "entity"


def canonical_key(fact: Fact, functional: frozenset[str] = DEFAULT_FUNCTIONAL) -> str:
    """The key of the belief ``fact`` states (:class:`retrieval.belief_keys.BeliefKey`):
    kind and subject type classified from the key's own parts (the object only as the key
    names it), so every statement on one slot -- Springfield, then Shelbyville -- keys
    alike."""
    rest = key_rest(fact, functional)
    kind, subject_type = classify(replace(fact, object=rest or ""))
    return str(BeliefKey(kind, subject_type, fact.subject_key, fact.predicate, rest))
