"""Issue 23's fault suite: CLIENT PAUSE and CLIENT KILL on a single Redis (its restart:
test_worker_redis_restart.py; OOM then free: test_oom_fault.py), and on the 3 masters + 3
replicas cluster a master failover, a master restart, CLIENT PAUSE, CLIENT KILL and OOM
then free, each under a write load with a real summarize worker process: 0 acknowledged
writes lost, 0 consolidated twice, 0 relay drops, every acknowledged write consolidated
within 60 s after the fault clears; with a gateway taking part, ``/readyz`` 200 within 5 s
of it (the load, the checks and the faults: faults_support.py).

Each prints one line with its figures (``pytest -s``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from faults_support import Outcome, kill, oom, pause, with_gateway

from blackboard.server import RedisServer
from tests.support_replicated import ReplicatedCluster, until
from tests.support_secure import secure_mode

pytestmark = pytest.mark.process  # worker (and gateway) processes, servers of their own

#: How long the failover test keeps the cluster down (CLUSTERDOWN) before the replica
#: takes over, and the restart test keeps its master down (the cluster down meanwhile).
CLUSTER_DOWN_S = 3.0
#: While Redis refuses writes: longer than a lease TTL and a heartbeat record's life (QUICK).
OOM_FOR_S = 6.0


async def _single_redis_fault(tmp_path: Path, name: str,
                              fault: Callable[[list[redis.Redis]], None]) -> None:
    """``fault([admin])`` on a single secure Redis with a worker, a writer and a gateway."""
    with RedisServer(data_dir=tmp_path / "data") as srv:
        secure = await asyncio.to_thread(secure_mode, srv.url, (srv.port,))
        admins = secure.admin_clients()
        try:
            await with_gateway(tmp_path, secure, name, lambda: fault(admins))
        finally:
            for a in admins:
                a.close()


async def test_client_pause_under_a_write_load(tmp_path: Path) -> None:
    await _single_redis_fault(tmp_path, "CLIENT PAUSE", pause)


async def test_client_kill_under_a_write_load(tmp_path: Path) -> None:
    await _single_redis_fault(tmp_path, "CLIENT KILL", kill)


async def _cluster_fault(c: ReplicatedCluster, tmp_path: Path, name: str,
                         fault: Callable[[list[redis.Redis]], None], **connect: object) -> Outcome:
    """``fault(masters)`` (admin clients of the three masters) on the 3+3 cluster in secure
    mode (the default user protected on all six nodes, saved to their aclfiles), with a
    worker, a writer and a gateway."""
    secure = await asyncio.to_thread(secure_mode, c.url, tuple(n.port for n in c.nodes))
    c.password = secure.password
    masters = [c.client(m) for m in c.masters]
    try:
        return await with_gateway(tmp_path, secure, f"{name} (cluster)",
                                  lambda: fault(masters), **connect)
    finally:
        for m in masters:
            m.close()


@pytest.mark.cluster
async def test_master_failover_under_a_write_load(
    replicated_cluster: ReplicatedCluster, tmp_path: Path,
) -> None:
    """The seed master (the node of every client's URL) is killed mid-load; the cluster is
    down 3 s more, then its replica takes over. The writer asks for
    ``durability="replicated"`` so an acknowledged write is on the replica that inherits it
    (else Redis itself may lose it in the failover). Killing the seed found a leak: the
    cluster client, reset by the CLUSTERDOWN, initialized itself again when a pipeline was
    opened, asked the dead node first, and redis-py's ConnectionError escaped write_many
    (the writer met it 2 runs of 2; now a ServerUnavailable, as
    test_cluster_connection_reset.py shows on one node)."""
    c = replicated_cluster
    victim = c.masters[0]
    heir = c.heir_of(victim)
    down_s: list[float] = []

    def failover(_masters: list[redis.Redis]) -> None:
        # The replica waits while the cluster is down (CLUSTERDOWN for a few seconds,
        # as with a production cluster-node-timeout): redis-py's cluster client resets
        # its connections on every CLUSTERDOWN, those in use included.
        with c.held_back(heir):
            victim.kill()
            t0 = time.monotonic()
            until(lambda: not c.ok(), "the cluster to go down")
            time.sleep(CLUSTER_DOWN_S)
            h = c.client(heir)
            try:
                h.execute_command("CLUSTER", "FAILOVER", "FORCE")
            finally:
                h.close()
            until(lambda: c.is_master(heir) and c.ok(), "the replica to take over", 60.0)
            down_s.append(time.monotonic() - t0)

    await _cluster_fault(c, tmp_path, "failover", failover, durability="replicated")
    print(f"failover: the cluster was down {down_s[0]:.1f}s")


@pytest.mark.cluster
async def test_master_restart_under_a_write_load(
    replicated_cluster: ReplicatedCluster, tmp_path: Path,
) -> None:
    """The seed master restarted with its data, its replica not promoted: what an operator
    meets restarting or upgrading a node in place (a rolling restart does it once per
    master; one restart costs ~9 s of cluster down here), on a cluster run without
    automatic failover or when the restart is quicker than a failover. SIGTERM (Redis
    flushes its AOF), the cluster down while the node is (3 s after it saw it fail), then
    the node back on its port with its AOF, nodes.conf and aclfile, but no scripts loaded;
    the fault has cleared when every master sees the cluster ok again. Default durability:
    a write the master acknowledged is in its AOF, flushed at shutdown. The seed, as every
    client's URL names it."""
    c = replicated_cluster
    victim = c.masters[0]
    down_s: list[float] = []

    def restart(_masters: list[redis.Redis]) -> None:
        with c.held_back(c.heir_of(victim)):
            t0 = time.monotonic()
            c.restart(victim, CLUSTER_DOWN_S)
            until(c.ok, "the cluster to be ok with the master back", 60.0)
            down_s.append(time.monotonic() - t0)

    await _cluster_fault(c, tmp_path, "master restart", restart)
    print(f"master restart: the cluster was down {down_s[0]:.1f}s")


@pytest.mark.cluster
async def test_client_pause_on_every_master_under_a_write_load(
    replicated_cluster: ReplicatedCluster, tmp_path: Path,
) -> None:
    await _cluster_fault(replicated_cluster, tmp_path, "CLIENT PAUSE", pause)


@pytest.mark.cluster
async def test_client_kill_on_every_master_under_a_write_load(
    replicated_cluster: ReplicatedCluster, tmp_path: Path,
) -> None:
    await _cluster_fault(replicated_cluster, tmp_path, "CLIENT KILL", kill)


@pytest.mark.cluster
async def test_oom_then_free_on_every_master_under_a_write_load(
    replicated_cluster: ReplicatedCluster, tmp_path: Path,
) -> None:
    """Every master's maxmemory below its used memory for 6 s (writes refused with the typed
    OutOfMemory), then set back; replicas ignore maxmemory (Redis's default)."""
    o = await _cluster_fault(replicated_cluster, tmp_path, "OOM then free",
                             lambda masters: oom(masters, OOM_FOR_S))
    assert o.refused["OutOfMemory"] > 0, o.refused
