"""Pure logic: levels, naming, configs, access rules, edges and triggers (no Redis)."""

from __future__ import annotations

import pytest

from blackboard import AccessDenied, InvalidArgument, InvalidScope
from memory import (
    EdgeCycle,
    InvalidEdge,
    MemoryLevel,
    MemorySubscription,
    TagMatch,
    Trigger,
    agent_scope,
    default_config,
    default_edges,
    parse_scope,
    team_scope,
)
from memory.access import AccessPolicy
from memory.catalog import forget_transformer_name, known_transformers
from memory.config import DEFAULT_LEVEL_CONFIGS
from memory.naming import OwnerKind
from memory.producers import json_safe
from memory.subscriptions import check_acyclic, register_transformer_name


def test_level_scopes_and_parse_round_trip() -> None:
    assert agent_scope("a1", MemoryLevel.SENSORY) == "agent:a1:sensory"
    assert agent_scope("a1", "working") == "agent:a1:working"
    assert agent_scope("a1", MemoryLevel.STM) == "agent:a1:stm"
    assert agent_scope("a1", MemoryLevel.EPISODIC) == "agent:a1:ltm:episodic"
    assert agent_scope("a1", MemoryLevel.SEMANTIC) == "agent:a1:ltm:semantic"
    assert agent_scope("a1", MemoryLevel.PROCEDURAL) == "agent:a1:ltm:procedural"
    assert team_scope("t1") == "team:t1"
    assert team_scope("t1", MemoryLevel.SEMANTIC) == "team:t1:ltm:semantic"
    for lvl in MemoryLevel:
        n = parse_scope(agent_scope("a1", lvl))
        assert (n.kind, n.owner, n.level) == (OwnerKind.AGENT, "a1", lvl)
        assert n.scope_id == agent_scope("a1", lvl)
        t = parse_scope(team_scope("t1", lvl))
        assert (t.kind, t.owner, t.level) == (OwnerKind.TEAM, "t1", lvl)
    root = parse_scope("team:t1")
    assert (root.kind, root.owner, root.level) == (OwnerKind.TEAM, "t1", None)
    assert parse_scope("collective").kind is OwnerKind.COLLECTIVE
    for bad in ("agent:a1", "agent:a1:ltm", "agent:a1:bogus", "other:x", "agent:a1:ltm:stm"):
        with pytest.raises(InvalidScope):
            parse_scope(bad)
    with pytest.raises(InvalidScope):
        agent_scope("a:1", MemoryLevel.STM)


def test_a_level_is_read_by_name_or_suffix_everywhere_in_one_wording() -> None:
    from memory.levels import LEVEL_NAMES, level_named

    for lvl in MemoryLevel:
        assert MemoryLevel.named(lvl.value) is lvl and MemoryLevel.named(lvl.segment) is lvl
        assert level_named(lvl.segment) is lvl
        assert {lvl.value, lvl.segment} <= set(LEVEL_NAMES)
    assert MemoryLevel.named("ltm") is None and MemoryLevel.named("ltm:stm") is None
    with pytest.raises(InvalidArgument, match=r"unknown memory level 'ltm'; levels: sensory, "):
        level_named("ltm")


def test_default_configs_per_level_and_overrides() -> None:
    sens = default_config("agent:a1:sensory")
    assert sens.limits.ttl == 300.0 and sens.level is MemoryLevel.SENSORY
    assert default_config("agent:a1:working").limits.max_entries == 200
    stm = default_config("agent:a1:stm").limits
    assert stm.ttl is not None and stm.ttl >= 86_400 and stm.decay_rate > 0
    for lvl in (MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL):
        lim = DEFAULT_LEVEL_CONFIGS[lvl]
        assert lim.ttl is None and 0 < lim.decay_rate <= 0.05
    c = default_config("agent:a1:working", max_entries=5, on_full="reject")
    assert c.policy().max_entries == 5 and c.policy().on_full == "reject"
    assert (c.kind, c.owner) == (OwnerKind.AGENT, "a1")
    with pytest.raises(InvalidArgument):
        default_config("agent:a1:working", bogus=1)
    with pytest.raises(InvalidArgument):
        default_config("agent:a1:working", decay_rate=2.0)


def test_access_rules() -> None:
    acc = AccessPolicy("a1", frozenset({"t1"}))
    for s in ("agent:a1:working", "agent:a1:ltm:semantic", "team:t1", "team:t1:stm"):
        assert acc.can_read(s) and acc.can_write(s)
    assert acc.can_read("collective") and not acc.can_write("collective")
    for s in ("agent:a2:working", "team:t2", "team:t10", "agent:a10:stm", "other"):
        assert not acc.can_read(s) and not acc.can_write(s)
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        acc.check_read("agent:a2:working")
    with pytest.raises(AccessDenied, match="collective"):
        acc.check_write("collective")


def test_subscription_match_and_validation() -> None:
    e = MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize")
    assert e.match("agent:a7:working") == "agent:a7:stm"
    assert e.match("agent:a7:stm") is None and e.match("agent:a:b:working") is None
    assert e.id == MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize").id
    two = MemorySubscription("team:*:*", "team:{2}:x{1}", "identity")
    assert two.match("team:t1:stm") == "team:stm:xt1"
    with pytest.raises(InvalidEdge, match="unknown transformer"):
        MemorySubscription("agent:*:working", "agent:{1}:stm", "nope")
    with pytest.raises(InvalidEdge, match=r"\{2\}"):
        MemorySubscription("agent:*:working", "agent:{2}:stm", "identity")
    with pytest.raises(InvalidEdge):
        MemorySubscription("agent:*:working", "agent {1}", "identity")
    with pytest.raises(InvalidEdge):
        MemorySubscription("agent:{x}", "agent:y", "identity")
    register_transformer_name("custom_t")
    assert "custom_t" in known_transformers()
    MemorySubscription("agent:*:working", "agent:{1}:stm", "custom_t")
    forget_transformer_name("custom_t")
    assert "custom_t" not in known_transformers()
    with pytest.raises(InvalidEdge):
        register_transformer_name("bad name")


def test_filter_on_subscription() -> None:
    e = MemorySubscription("agent:*:working", "agent:{1}:stm", "identity",
                           filter=TagMatch.of(all_of={"a"}, none_of={"x"}))
    assert e.accepts("agent:b:working", {"a", "b"}) == "agent:b:stm"
    assert e.accepts("agent:b:working", {"a", "x"}) is None
    assert e.accepts("agent:b:working", {"b"}) is None


def test_cycles_rejected() -> None:
    edges = default_edges("a1", ["t1"])
    for i, e in enumerate(edges):
        check_acyclic(edges[:i], e)  # the default hierarchy is acyclic
    back = MemorySubscription("agent:*:stm", "agent:{1}:working", "identity")
    with pytest.raises(EdgeCycle, match="cycle"):
        check_acyclic(edges, back)
    concrete = MemorySubscription("agent:a1:ltm:semantic", "agent:a1:sensory", "identity")
    with pytest.raises(EdgeCycle):
        check_acyclic(edges, concrete)
    with pytest.raises(EdgeCycle):
        check_acyclic([], MemorySubscription("team:t1", "team:t1", "identity"))
    # Into team scopes and onwards to collective: no path back, accepted.
    check_acyclic(edges, MemorySubscription("team:*", "collective", "team"))


def test_triggers() -> None:
    t = Trigger.any_of(Trigger.count(10), Trigger.age(60), Trigger.timer(300))
    assert (t.min_count, t.max_age, t.every) == (10, 60, 300)
    assert t.fires(10, 0, 0) and t.fires(1, 61, 0) and t.fires(0, 0, 301)
    assert not t.fires(9, 59, 299)
    assert not Trigger.age(5).fires(0, 100, 100)  # nothing buffered: no age to honour
    assert Trigger.from_json(t.to_json()) == t
    with pytest.raises(InvalidEdge):
        Trigger()
    with pytest.raises(InvalidEdge):
        Trigger.count(0)


def test_json_safe() -> None:
    class X:
        def __repr__(self) -> str:
            return "X()"

    got = json_safe({"a": X(), "b": [1, 2.5, float("nan")], "c": "y" * 5000, 3: (1,)})
    assert got["a"] == "X()" and got["b"][:2] == [1, 2.5] and isinstance(got["b"][2], str)
    assert len(got["c"]) == 1000 and got["3"] == [1]
    assert len(json_safe(list(range(1000)))) == 50
