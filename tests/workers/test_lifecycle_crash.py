"""Issue 11, the crash case that showed the losses: 2 ``worker --role all`` processes with
default settings, the default hierarchy, 5,000 working entries over 5 agents, 12 kill -9s
while they are written. Every working entry is consolidated exactly once through the
identity and the summarize edge, and no log holds a MaxConnectionsError.

Default triggers hold the last few items of a buffer for up to 60 s (identity) and 600 s
(summarize); once the writes and kills are over the test, as an operator would, sets those
two triggers to half a second (an explicit edge change, which workers apply at once), so the
tail is drained without waiting ten minutes.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path

import pytest
from support_lifecycle import (
    QUICK_TRIGGERS,
    Procs,
    dlq_sample,
    dlq_total,
    drained,
    exactly_once,
    ledger,
    set_triggers,
    state,
    wait_done,
    wait_for,
    write_steps,
)

from blackboard import Blackboard
from memory.hierarchy import install_default_hierarchy

pytestmark = [pytest.mark.slow, pytest.mark.process]  # worker processes (support_lifecycle.Procs)

AGENTS = 5
PER_AGENT = 1_000
KILLS = 12
GROUPS = ("summarize",)  # the consumer group of the identity and summarize edges
EDGES = ("summarize", "identity")


async def test_crash_case_2_workers_12_kills_default_settings(
    redis_url: str, clean_redis: object, tmp_path: Path
) -> None:
    procs = Procs(redis_url, tmp_path)
    t0 = time.monotonic()
    try:
        async with Blackboard.connect(redis_url, partitions=8) as bb:
            agents = [f"c{i}" for i in range(AGENTS)]
            for a in agents:
                await install_default_hierarchy(bb, a)
            workers = [procs.start("all") for _ in range(2)]
            kills = 0
            rnd = random.Random(11)

            def killer() -> None:
                nonlocal kills
                while kills < KILLS:
                    time.sleep(rnd.uniform(2.0, 4.0))
                    i = rnd.randrange(len(workers))
                    procs.kill9(workers[i])
                    workers[i] = procs.start("all")
                    kills += 1

            written: dict[str, list[str]] = {a: [] for a in agents}
            chunk = 25
            t = threading.Thread(target=killer, daemon=True)
            for s in range(0, PER_AGENT, chunk):
                for a in agents:
                    written[a] += await write_steps(bb, a, chunk, chunk=chunk, first=s)
                if s == 0:
                    # The kills start once the workers consume: a worker killed while still
                    # importing would only test a burst with no workers.
                    async def consuming() -> bool:
                        return bool((await ledger(bb, agents[0])).identity)
                    assert await wait_for(consuming, 120), procs.log_text()[-3000:]
                    t.start()
                await asyncio.sleep(0.8)
            t.join(120)
            assert kills == KILLS
            t_writes = time.monotonic() - t0
            await set_triggers(bb, {k: QUICK_TRIGGERS[k] for k in ("identity", "summarize")})

            async def done() -> bool:
                for a in agents:
                    led = await ledger(bb, a)
                    if not (set(led.identity) >= set(written[a])
                            and set(led.summarize) >= set(written[a])):
                        return False
                return await drained(bb, GROUPS, EDGES)

            # The index role's embedding backlog is not what this case is about: only the
            # summarize group and the identity/summarize buffers must be drained.
            finished = await wait_done(bb, done, 300, settle=15, only=GROUPS, edges=EDGES)
            never = twice = 0
            for a in agents:
                led = await ledger(bb, a)
                for seen in (led.identity, led.summarize):
                    lost, dup, foreign = exactly_once(written[a], seen)
                    never, twice = never + lost, twice + dup
                    assert foreign == 0
            maxconn = procs.count_in_logs("MaxConnectionsError")
            none_attr = procs.count_in_logs("'NoneType' object has no attribute")
            print(f"crash case: {AGENTS * PER_AGENT} entries, {kills} kill -9s: never "
                  f"consolidated {never}, twice {twice}, MaxConnectionsError {maxconn}, "
                  f"NoneType errors {none_attr}, dlq {await dlq_total(bb)}; writes+kills "
                  f"{t_writes:.0f}s, total {time.monotonic() - t0:.0f}s")
            assert sum(len(v) for v in written.values()) == AGENTS * PER_AGENT
            assert never == 0, await state(bb)
            assert twice == 0
            assert maxconn == 0
            assert none_attr == 0
            assert await dlq_total(bb) == 0, await dlq_sample(bb)
            assert finished, await state(bb)
            assert procs.stop_all() == []
    finally:
        procs.close()
