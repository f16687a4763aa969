"""Edges take effect at once on the 3-master cluster: the edge records, each partition's
edges version and the buffers live on different masters."""

from __future__ import annotations

import pytest
import redis
from edges_support import NO_BACKSTOP, until, wait_ready
from test_edges_at_once import CONSOLIDATING, _write, reach_report
from workers_support import WorkerProcs

from blackboard import Blackboard
from blackboard.server import RedisClusterServer
from memory.hierarchy import install_default_hierarchy
from memory.subscriptions import MemorySubscription

pytestmark = pytest.mark.slow


async def test_writes_right_after_install_on_the_cluster(
    cbb: Blackboard, cluster: RedisClusterServer
) -> None:
    procs = WorkerProcs(cluster.url)
    r: redis.RedisCluster = redis.RedisCluster.from_url(cluster.url)
    try:
        w = procs.start("all", **NO_BACKSTOP)
        await wait_ready(cbb, r, CONSOLIDATING)
        agents = [f"c{i}" for i in range(4)]
        edges: dict[str, MemorySubscription] = {}
        for a in agents:
            h = await install_default_hierarchy(cbb, a, teams=["t1"])
            edges.update({e.id: e for e in h.edges})
            await _write(cbb, a, 20)

        async def done() -> str | bool:
            return await reach_report(cbb, r, agents, list(edges.values())) or True

        await until(done, 90, "every write on the cluster reaching its edges", w)
        assert w.poll() is None
    finally:
        procs.close()
        r.close()
