"""Operator views: live workers, partitions with their consumer groups and leases, dead
letters, re-drive and its audit trail. Only an operator token may call these (and only its
service user may read the buses and the lease table: Redis refuses an agent's user too)."""

from __future__ import annotations

import dataclasses
from typing import Any

from blackboard import AccessDenied
from workers.heartbeat import list_workers
from workers.lease_view import lease_rows, read_leases
from workers.settings import WorkerSettings
from workers.stats import collect_stats, progress_rows

from ..caller import Caller

__all__ = ["audit", "dlq", "redrive_one", "require_operator", "workers_view"]


def require_operator(caller: Caller) -> None:
    if not caller.operator:
        raise AccessDenied(f"agent {caller.agent_id!r}: the workers view and re-drive need an "
                           "operator token (`blackboard token create --operator`)")


async def workers_view(caller: Caller) -> dict[str, Any]:
    require_operator(caller)
    st = await collect_stats(caller.bb)
    snap = await read_leases(caller.bb)
    ttl = WorkerSettings.from_env().lease_ttl_ms
    workers = await list_workers(caller.bb)
    now = caller.bb.now_ms()
    return {
        "now": now,
        "totals": st.totals(),
        "partitions": [dataclasses.asdict(b) for b in st.buses],
        "workers": [dataclasses.asdict(w) | {"counters": dict(w.counters)} for w in workers],
        "leases": [dataclasses.asdict(r) for r in lease_rows(snap, ttl)],
        # per role and partition, the age of its reader's last progress (issue 23)
        "progress": progress_rows(workers, now),
    }


async def dlq(caller: Caller, limit: int, partition: int | None) -> dict[str, Any]:
    require_operator(caller)
    items = await caller.bb.dead_letters.list(limit=limit, partition=partition)
    # the typed fields only: what the dashboard has always shown
    return {"items": [{k: v for k, v in dataclasses.asdict(d).items() if k != "fields"}
                      for d in items]}


async def redrive_one(caller: Caller, partition: int, dlq_id: str) -> dict[str, Any]:
    require_operator(caller)
    by = f"{caller.agent_id} ({caller.token_id})"
    rec = await caller.bb.dead_letters.redrive(partition, dlq_id, by=by)
    return dataclasses.asdict(rec)


async def audit(caller: Caller, limit: int) -> dict[str, Any]:
    require_operator(caller)
    records = await caller.bb.dead_letters.audit(limit=limit)
    return {"items": [dataclasses.asdict(a) for a in records]}
