"""What an operator token sees: every registered scope (map and stats), read on the
service user's connection (which Redis lets read every key)."""

from __future__ import annotations

from typing import Any

from memory import Registry
from memory.access import AccessPolicy
from memory.memory_map import build_memory_map

from .caller import Caller

__all__ = ["all_scopes", "operator_map", "operator_stats"]


async def all_scopes(caller: Caller) -> list[str]:
    reg = Registry(caller.bb)
    try:
        return await reg.scope_ids()
    finally:
        await reg.aclose()


async def operator_map(caller: Caller) -> dict[str, Any]:
    reg = Registry(caller.bb)
    try:
        configs = {c.scope_id: c for c in await reg.list_scopes()}
        access = AccessPolicy(caller.agent_id, frozenset(caller.teams))
        d = (await build_memory_map(caller.bb, reg, access, sorted(configs),
                                    configs=configs)).to_dict()
    finally:
        await reg.aclose()
    d["agent"] = "*"
    return d


async def operator_stats(caller: Caller) -> dict[str, dict[str, Any]]:
    return {s.scope: s.to_json() for s in await caller.bb.reads.stats(await all_scopes(caller))}
