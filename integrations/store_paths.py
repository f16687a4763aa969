"""Where a LangGraph store item lives on the blackboard, and the store's pure rules.

LangGraph addresses an item by ``(namespace, key)``, a namespace being a tuple of labels.
The blackboard addresses entries by scope and logical key. The mapping, by the
namespace's first label:

=====================================  ===================================================
namespace                              scope
=====================================  ===================================================
``("team", t, ...)``                   ``team:<t>`` (the agent must be a member of ``t``)
``("collective", ...)``                ``collective`` (every agent reads it; writing needs
                                       a right agents do not have)
``("agent", a, ...)``                  ``agent:<a>:<level>``: only ``a`` = the store's agent
anything else (``("users", "u1")``)    ``agent:<agent>:<level>``, the store's own scope
=====================================  ===================================================

``level`` is the store's (long-term semantic memory by default). The whole namespace is
kept with the item, so ``("users", "u1")`` and ``("agent", "a1", "users", "u1")`` are two
namespaces even though both live in the agent's scope. Within a scope, an item is the
entry whose logical key is :func:`item_key` (a put on an existing key updates that entry:
``created_at`` stays, ``updated_at`` moves) and which carries :data:`ITEM_TAG` and its
namespace's tag (:func:`namespace_tag`), so a search or a listing reads the tag indexes
and never scans. Its value is :func:`wrap` of the item's value: the namespace and key
inside it make every item's text unique, so the maintenance's exact dedupe (the workers'
default) never folds two items with equal values into one; a near-duplicate dedupe by
meaning, where an operator turns it on, could, so keep it off for scopes a store uses.
Items age as the scope's policy says (``agent:<a>:ltm:semantic`` decays 1 % a day and is
pruned at 5 %, about 300 days without reinforcement): pick ``level`` accordingly.

Everything here is plain data: no Redis, no LangGraph.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from blackboard import AccessDenied, InvalidArgument, InvalidKey
from blackboard.validation import MAX_KEY_LEN
from memory.access import AccessPolicy
from memory.naming import COLLECTIVE, agent_scope, team_scope

__all__ = [
    "ITEM_TAG",
    "NS_TAG_PREFIX",
    "check_filter",
    "compare",
    "item_key",
    "item_scope",
    "namespace_matches",
    "namespace_tag",
    "prefix_scopes",
    "unwrap",
    "value_matches",
    "wrap",
]

#: Every store item carries this tag (and its namespace's tag).
ITEM_TAG = "langgraph"
#: Prefix of a namespace's tag: ``lgns:`` + 32 hex digits of the namespace's sha256.
NS_TAG_PREFIX = "lgns:"
_KEY_PREFIX = "lg:"

Namespace = tuple[str, ...]


def namespace_tag(namespace: Sequence[str]) -> str:
    """The tag of one namespace (fixed length: labels may be long and hold any character
    a tag may not)."""
    digest = hashlib.sha256(json.dumps(list(namespace)).encode()).hexdigest()[:32]
    return NS_TAG_PREFIX + digest


def item_key(namespace: Sequence[str], key: str) -> str:
    """The logical key of an item: ASCII JSON of the labels and the key (injective, and
    free of the control characters a logical key may not hold)."""
    out = _KEY_PREFIX + json.dumps([*namespace, key])
    if len(out) > MAX_KEY_LEN:
        raise InvalidKey(f"namespace and key are too long together: {len(out)} characters "
                         f"encoded, at most {MAX_KEY_LEN}: {key!r:.60}")
    return out


def wrap(namespace: Sequence[str], key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """The entry value of an item (none of its top-level names is a text field)."""
    return {"namespace": list(namespace), "key": key, "value": dict(value)}


def unwrap(entry_key: str | None, value: Any) -> tuple[Namespace, str, dict[str, Any]] | None:
    """(namespace, key, value) of a store item's entry; None for any other entry (one a
    worker derived from items, which may inherit their tags)."""
    if not isinstance(value, dict) or set(value) != {"namespace", "key", "value"}:
        return None
    ns, key, inner = value["namespace"], value["key"], value["value"]
    if (not isinstance(ns, list) or not all(isinstance(x, str) for x in ns)
            or not isinstance(key, str) or not isinstance(inner, dict)):
        return None
    if entry_key != _KEY_PREFIX + json.dumps([*ns, key]):
        return None
    return tuple(ns), key, inner


# -- namespaces and scopes -----------------------------------------------------------------


def _denied(namespace: Sequence[str], exc: AccessDenied) -> AccessDenied:
    return AccessDenied(f"namespace {tuple(namespace)!r}: {exc}")


def item_scope(access: AccessPolicy, namespace: Namespace, level: str, *,
               write: bool = True) -> str:
    """The scope that holds the items of ``namespace``; InvalidArgument for a
    ``team``/``agent`` namespace without its id or with one no scope may carry,
    AccessDenied (naming the namespace) for a scope the agent may not write (``write``)
    or read."""
    head = namespace[0]
    if head in ("team", "agent") and len(namespace) < 2:
        raise InvalidArgument(f"a {head!r} namespace names the {head} next: "
                              f"({head!r}, '<id>', ...)")
    if head == "team":
        sid = team_scope(namespace[1])
    elif head == "agent":
        sid = agent_scope(namespace[1], level)
    elif head == COLLECTIVE:
        sid = COLLECTIVE
    else:
        sid = agent_scope(access.agent_id, level)
    try:
        return access.check_write(sid) if write else access.check_read(sid)
    except AccessDenied as exc:
        raise _denied(namespace, exc) from None


def prefix_scopes(access: AccessPolicy, prefix: Namespace, level: str) -> list[str]:
    """The scopes that may hold namespaces starting with ``prefix`` (``*`` matches any
    label), each readable; AccessDenied (naming the prefix) when the prefix names one the
    agent may not read."""
    own = agent_scope(access.agent_id, level)
    teams = [team_scope(t) for t in sorted(access.teams)]
    head = prefix[0] if prefix else "*"
    second = prefix[1] if len(prefix) > 1 else "*"
    if head == "*":
        return [own, *teams, COLLECTIVE]
    try:
        if head == "team":
            return teams if second == "*" else [access.check_read(team_scope(second))]
        if head == "agent":
            return [own] if second == "*" else [access.check_read(agent_scope(second, level))]
    except AccessDenied as exc:
        raise _denied(prefix, exc) from None
    if head == COLLECTIVE:
        return [COLLECTIVE]
    return [own]


def namespace_matches(namespace: Namespace, path: Namespace, kind: str) -> bool:
    """LangGraph's ``MatchCondition``: ``path`` is a prefix (``kind="prefix"``) or a
    suffix of ``namespace``, label by label, ``*`` matching any one label."""
    if len(namespace) < len(path):
        return False
    if kind == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif kind == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"unsupported namespace match type {kind!r}: 'prefix' or 'suffix'")
    return all(p == "*" or n == p for n, p in pairs)


# -- filters ------------------------------------------------------------------------------

_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def value_matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search filter: every field equals its filter value
    (nested mappings and lists compared member by member) or passes the filter's
    operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``), as LangGraph's
    stores do."""
    return not flt or all(compare(value.get(k), want) for k, want in flt.items())


def compare(actual: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_apply(actual, op, v) for op, v in want.items())
        return isinstance(actual, dict) and all(
            compare(actual.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (isinstance(actual, list | tuple) and len(actual) == len(want)
                and all(compare(a, w) for a, w in zip(actual, want, strict=True)))
    return bool(actual == want)


def check_filter(flt: Mapping[str, Any] | None) -> None:
    """ValueError naming an unknown ``$`` operator anywhere in ``flt`` (checked before a
    search reads anything)."""
    for want in (flt or {}).values():
        if isinstance(want, dict):
            bad = [k for k in want if k.startswith("$") and k not in _OPERATORS]
            if bad:
                raise ValueError(f"unsupported filter operator {bad[0]!r}; supported: "
                                 f"{', '.join(sorted(_OPERATORS))}")
            check_filter({k: v for k, v in want.items() if not k.startswith("$")})


def _apply(actual: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(actual == want)
    if op == "$ne":
        return bool(actual != want)
    try:  # ordering compares numbers, as LangGraph's stores do; a missing field fails it
        a, w = float(actual), float(want)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > w, "$gte": a >= w, "$lt": a < w, "$lte": a <= w}[op]
