"""Issue 23 item 7: ``durability="replicated"``: a write is acknowledged once N replicas
have it (WAIT) / it is fsynced (WAITAOF); short of that a typed NotReplicated, the write
kept. On a 3 masters + 3 replicas cluster with a master killed mid-write, every write
acknowledged under "replicated" is readable after the failover."""

from __future__ import annotations

import asyncio

import pytest
import redis

from blackboard import Blackboard, InvalidArgument
from blackboard.durability import Wait
from blackboard.errors import NotReplicated
from blackboard.server import RedisServer
from blackboard.settings import ClientSettings
from tests.support_replicated import ReplicatedCluster, is_master, until

S = "agent:a1:working"


def test_settings_validate_and_imply_replicated() -> None:
    with pytest.raises(InvalidArgument, match="durability must be"):
        ClientSettings(durability="sync")
    with pytest.raises(InvalidArgument, match="wait_replicas"):
        ClientSettings(wait_replicas=-1)
    assert Wait.of(ClientSettings()) is None
    assert Wait.of(ClientSettings(durability="replicated")) == Wait(1, False, 2000)
    assert Wait.of(ClientSettings(wait_replicas=2)) == Wait(2, False, 2000)
    assert Wait.of(ClientSettings(wait_aof=True)) == Wait(0, True, 2000)


def test_not_replicated_says_how_many_acknowledged() -> None:
    e = NotReplicated("entry x of s", wanted=2, replicas=1)
    assert "acknowledged by 1 of 2 replica(s)" in str(e) and "durable on the master" in str(e)
    assert (e.wanted, e.replicas) == (2, 1)


async def test_write_without_replicas_raises_and_stays(bb: Blackboard, redis_url: str) -> None:
    s = ClientSettings(durability="replicated", wait_timeout_ms=50, partitions=8)
    async with Blackboard.connect(redis_url, settings=s) as rbb:
        sc = rbb.scope(S)
        with pytest.raises(NotReplicated) as exc:
            await sc.write("kept", entry_id="e1")
        assert exc.value.replicas == 0 and exc.value.wanted == 1
        assert (await sc.get("e1")).value == "kept"  # durable locally, not replicated
        with pytest.raises(NotReplicated):
            await sc.write_many(["a", "b"])
        assert len(await sc.entries(limit=None)) == 3
        with pytest.raises(NotReplicated):
            await sc.update("e1", value="changed")
        assert (await sc.get("e1")).value == "changed"
    # the default acknowledges on the master alone
    assert (await bb.scope(S).write("plain")).value == "plain"


async def test_wait_aof_on_a_redis_without_waitaof_says_so(bb: Blackboard,
                                                          redis_url: str) -> None:
    version = (await bb.client.info("server"))["redis_version"]
    if tuple(int(x) for x in version.split(".")[:2]) >= (7, 2):
        pytest.skip("this Redis has WAITAOF (>= 7.2): the refusal is for 7.0")
    with pytest.raises(InvalidArgument, match=r"WAITAOF.*7\.2"):
        async with Blackboard.connect(redis_url, partitions=8, wait_aof=True):
            pass


async def test_wait_aof_waits_for_the_local_fsync(clean_redis: redis.Redis) -> None:
    """On Redis >= 7.2 with the AOF on: acknowledged once fsynced; a replica asked for and
    missing is a NotReplicated that counts the local fsync."""
    with RedisServer(extra_args=("--appendonly", "yes")) as server:
        if server.version < (7, 2, 0):
            pytest.skip("WAITAOF came with Redis 7.2")
        async with Blackboard.connect(server.url, partitions=8, wait_aof=True) as bb:
            assert (await bb.scope(S).write("synced")).value == "synced"
        async with Blackboard.connect(server.url, partitions=8, wait_aof=True,
                                      wait_replicas=1, settings=ClientSettings(
                                          partitions=8, wait_timeout_ms=50)) as bb:
            with pytest.raises(NotReplicated) as exc:
                await bb.scope(S).write("kept", entry_id="e2")
            # everysec: the local fsync may still be due within a 50 ms timeout
            assert exc.value.aof and exc.value.local in (0, 1) and exc.value.replicas == 0
            assert (await bb.scope(S).get("e2")).value == "kept"


@pytest.mark.cluster
async def test_acknowledged_writes_survive_a_master_failover(
    replicated_cluster: ReplicatedCluster,
) -> None:
    url = replicated_cluster.masters[0].url
    acked: list[tuple[str, str]] = []
    refused = 0
    stop = asyncio.Event()
    # short timeouts: a write to the dead master fails fast and is tried again
    fast = ClientSettings(partitions=8, connect_timeout=0.5, socket_timeout=3.0, retries=1)
    async with Blackboard.connect(url, settings=fast, durability="replicated") as bb:
        scopes = [f"agent:a{i}:working" for i in range(8)]
        # the victim: the master serving the first scope's partition (not the seed node)
        victim_port = _port_of(bb, scopes[0])
        victim = next(n for n in replicated_cluster.masters if n.port == victim_port)
        if victim is replicated_cluster.masters[0]:
            url = replicated_cluster.masters[1].url

        async def writer() -> None:
            nonlocal refused
            i = 0
            while not stop.is_set():
                sc = bb.scope(scopes[i % len(scopes)])
                eid = f"w{i:05d}"
                try:
                    await sc.write(f"note {i}", entry_id=eid)
                    acked.append((sc.id, eid))
                except Exception:  # refused or not replicated: not acknowledged
                    refused += 1
                    await asyncio.sleep(0.05)
                i += 1

        # a batch is one MULTI/EXEC, and its wait follows EXEC on the same connection
        # (inside MULTI a WAIT answers at once): acknowledged by the slot's replica
        batch = await bb.scope(scopes[1]).write_many([f"batch {i}" for i in range(20)])
        acked += [(scopes[1], e.id) for e in batch]
        task = asyncio.create_task(writer())
        await asyncio.sleep(1.5)
        n_before = len(acked)
        victim.kill()
        # its replica takes over (cluster-node-timeout 2 s), then the writes go on a while
        heir = replicated_cluster.heir_of(victim)
        await asyncio.to_thread(until, lambda: is_master(heir.port),
                                "the replica to take over", 60.0)
        await asyncio.sleep(2)
        stop.set()
        await task
    assert n_before > 0, (n_before, len(acked), refused)
    # after the failover, from a fresh client: every acknowledged write is there
    async with Blackboard.connect(url, partitions=8) as bb2:
        for _ in range(100):
            try:
                missing = [a for a in acked if not await _exists(bb2, *a)]
                break
            except Exception:
                await asyncio.sleep(0.2)
        else:
            raise AssertionError("the cluster did not answer after the failover")
    assert missing == [], f"{len(missing)} acknowledged writes lost of {len(acked)}"
    print(f"acked {len(acked)} ({n_before} before the kill), refused {refused}")


def _port_of(bb: Blackboard, scope: str) -> int:
    node = bb.client.get_node_from_key(bb.scope(scope).keys.entry("x"))
    return int(node.port)


async def _exists(bb: Blackboard, scope: str, eid: str) -> bool:
    return bool(await bb.client.exists(bb.scope(scope).keys.entry(eid)))
