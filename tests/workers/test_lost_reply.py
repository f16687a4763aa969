"""A reply lost with its connection at the worst moment loses no write (the silent stall a
``CLIENT KILL`` under load once caused: 5 acknowledged writes never consolidated, every
reader still progressing). Redis runs the command, the connection dies before its reply
arrives, and redis-py runs the command again on a new connection:

- ``XREADGROUP >``: the first run handed the events to the worker's consumer, so they
  wait in its pending list; the retry answers with what came after. The reader must look
  at its pending list again (``blackboard.retries``), also long after its start-up's
  claims ended.
- the relay's blocking wait on the partition inbox: it must not take the item it woke for
  out of the inbox (``BLMOVE`` used to move it to ``relaying``, where it stayed until the
  partition's next write).

A real summarize worker process with the default settings talks to Redis through a proxy
(``tests/support_proxy.py``) that closes its connection instead of passing on one reply;
then every acknowledged write must be consolidated, once, with no other write coming."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis
from support_lifecycle import (
    QUICK_TRIGGERS,
    Procs,
    exactly_once,
    ledger,
    set_triggers,
    wait_for,
    write_steps,
)
from support_proxy import ReplyLosingProxy

from blackboard import Blackboard
from memory.hierarchy import install_default_hierarchy
from workers.heartbeat import list_workers
from workers.settings import WorkerSettings

pytestmark = pytest.mark.process  # a worker process

PARTITIONS = 8
AGENT = "lr"
#: The default settings' claim window after a reader starts (workers.worker): the lost
#: reply comes after it, when nothing but the fix would look at the pending list again.
_S = WorkerSettings()
CLAIM_WINDOW_S = (_S.lease_ttl_ms + 2 * _S.heartbeat_ms + 2 * _S.claim_idle_ms) / 1000
#: Every write consolidated within this after the reply was lost (the edges' quick
#: triggers fire within 0.5 s of a write).
WITHIN_S = 20.0


@pytest.mark.parametrize(("command", "writes"), [
    ("XREADGROUP", 5),  # one chunk: its events handed out in the one lost reply
    ("BLMOVE", 1),  # the last item the wait took was the only one: nothing came after it
])
async def test_a_reply_lost_with_its_connection_loses_no_write(
    command: str, writes: int, redis_url: str, clean_redis: redis.Redis, tmp_path: Path
) -> None:
    port = clean_redis.connection_pool.connection_kwargs["port"]
    with ReplyLosingProxy(port) as proxy:
        via = redis_url.replace(f":{port}", f":{proxy.port}", 1)
        procs = Procs(via, tmp_path)
        try:
            async with Blackboard.connect(redis_url, partitions=PARTITIONS) as bb:
                await install_default_hierarchy(bb, AGENT)
                await set_triggers(bb, {k: QUICK_TRIGGERS[k] for k in ("identity",
                                                                      "summarize")})
                worker = procs.start("summarize")

                async def running() -> bool:
                    return any(w.role == "summarize" and len(w.partitions) == PARTITIONS
                               for w in await list_workers(bb))

                assert await wait_for(running, 60, every=0.2), procs.log_text()[-3000:]
                # past the readers' claims after start-up, and a first write consolidated
                warm = await write_steps(bb, AGENT, 2, chunk=2)
                await asyncio.sleep(CLAIM_WINDOW_S + 2)
                proxy.arm(command)
                written = await write_steps(bb, AGENT, writes, chunk=writes, first=2)
                assert await asyncio.to_thread(proxy.lost.wait, 10), f"no {command} reply lost"
                lost_at = time.monotonic()

                async def consolidated() -> bool:
                    led = await ledger(bb, AGENT)
                    return set(led.identity) >= {*warm, *written} and set(
                        led.summarize) >= {*warm, *written}

                done = await wait_for(consolidated, WITHIN_S)
                took = time.monotonic() - lost_at
                led = await ledger(bb, AGENT)
                print(f"{command} reply lost: consolidated {done} {took:.1f}s after")
                for seen in (led.identity, led.summarize):
                    assert exactly_once([*warm, *written], seen)[:2] == (0, 0), (
                        command, seen, procs.log_text()[-3000:])
                assert worker.poll() is None, procs.log_text()[-3000:]
            assert procs.stop_all() == []
        finally:
            procs.close()
