"""A 3 masters + 3 replicas Redis Cluster on loopback ports (issue 23: durability and the
fault suite's failover), and the helpers to watch a failover from outside."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator

import redis

from blackboard.server import RedisServer

__all__ = ["ReplicatedCluster", "is_master", "until"]

#: A replica's first sync starts at once (Redis waits 5 s by default for more replicas to
#: share a diskless transfer: 4 of the 7 s this fixture took to start).
_NODE_ARGS = ("--repl-diskless-sync-delay", "0")


class ReplicatedCluster:
    """``masters[i]`` serves a third of the slots; ``replicas[i]`` replicates it (and takes
    over when it dies: cluster-node-timeout 2 s, see :class:`RedisServer`). ``password``:
    the default user's once a test put the cluster in secure mode (the helpers log in)."""

    def __init__(self) -> None:
        self.masters = [RedisServer(cluster=True, extra_args=_NODE_ARGS) for _ in range(3)]
        self.replicas = [RedisServer(cluster=True, extra_args=_NODE_ARGS) for _ in range(3)]
        self.password: str | None = None

    @property
    def nodes(self) -> list[RedisServer]:
        return self.masters + self.replicas

    @property
    def url(self) -> str:
        return self.masters[0].url

    def start(self) -> ReplicatedCluster:
        for n in self.nodes:
            n.start()
        cs = [redis.Redis(port=n.port) for n in self.nodes]
        try:
            per = 16384 // 3
            for i, c in enumerate(cs[:3]):
                hi = 16383 if i == 2 else (i + 1) * per - 1
                c.execute_command("CLUSTER", "ADDSLOTS", *range(i * per, hi + 1))
            for c in cs[1:]:
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port)
            until(lambda: all(_known(c) == 6 for c in cs), "the nodes to meet")
            for m, r in zip(cs[:3], cs[3:], strict=True):
                mid = m.execute_command("CLUSTER", "MYID")
                until(lambda r=r, mid=mid: _replicate(r, mid), "a replica to attach")
            until(lambda: all(_ok(c) for c in cs) and all(
                r.info("replication").get("master_link_status") == "up" for r in cs[3:]),
                "the cluster with its replicas in sync")
        finally:
            for c in cs:
                c.close()
        return self

    def heir_of(self, master: RedisServer) -> RedisServer:
        return self.replicas[self.masters.index(master)]

    def client(self, node: RedisServer) -> redis.Redis:
        """A plain client of one node (logged in as default in secure mode)."""
        if self.password is None:
            return redis.Redis(port=node.port)
        return redis.Redis(port=node.port, username="default", password=self.password)

    def ok(self) -> bool:
        """The view of every running master: cluster_state:ok."""
        return all(_ask(self.client(m), _ok) for m in self.masters
                   if m.proc is not None and m.proc.poll() is None)

    def is_master(self, node: RedisServer) -> bool:
        return bool(_ask(self.client(node),
                         lambda c: c.info("replication")["role"] == "master"))

    @contextlib.contextmanager
    def held_back(self, replica: RedisServer) -> Iterator[None]:
        """``replica`` takes over from its master only when told (CLUSTER FAILOVER)."""
        c = self.client(replica)
        try:
            c.config_set("cluster-replica-no-failover", "yes")
            yield
            c.config_set("cluster-replica-no-failover", "no")
        finally:
            c.close()

    def restart(self, node: RedisServer, down_s: float) -> None:
        """SIGTERM ``node`` (Redis flushes its AOF), keep it down ``down_s`` with the
        cluster seeing it fail, then start it again on its port, data and nodes.conf
        (``RedisServer.stop`` would remove a temporary data directory)."""
        assert node.proc is not None
        node.proc.send_signal(signal.SIGTERM)
        node.proc.wait(10)
        until(lambda: not self.ok(), "the cluster to see the node down")
        time.sleep(down_s)
        node.start()

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


def until(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``cond`` (a Redis error counts as not yet) until true, or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(redis.RedisError):
            if cond():
                return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def is_master(port: int) -> bool:
    r = redis.Redis(port=port)
    try:
        return r.info("replication")["role"] == "master"
    finally:
        r.close()


def _ask(c: redis.Redis, question: Callable[[redis.Redis], bool]) -> bool:
    try:
        return question(c)
    finally:
        c.close()


def _known(c: redis.Redis) -> int:
    info = c.execute_command("CLUSTER", "INFO")
    text = info.decode() if isinstance(info, bytes) else str(info)
    return int(text.split("cluster_known_nodes:")[1].split()[0])


def _ok(c: redis.Redis) -> bool:
    info = c.execute_command("CLUSTER", "INFO")
    return "cluster_state:ok" in (info.decode() if isinstance(info, bytes) else str(info))


def _replicate(r: redis.Redis, master_id: bytes | str) -> bool:
    r.execute_command("CLUSTER", "REPLICATE", master_id)
    return True
