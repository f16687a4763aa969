"""Crash-test consumer: processes bus events of role "crash" with idempotent effects.

Usage: crash_consumer.py URL CONSUMER N SLEEP_S CLAIM_IDLE_MS READY_FILE

Per event: SADD the entry id to ``test:crash:done``, HINCRBY ``test:crash:times`` (to count
re-processing), and write a derived entry with a deterministic id (a replay is a no-op);
sleep; ack after the whole batch. Touches READY_FILE after its first processed events and
exits once all N entries are done.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from blackboard import Blackboard, ConsumeOptions
from blackboard.ids import deterministic_id

DONE, TIMES = "test:crash:done", "test:crash:times"
SOURCE = "agent:crash:working"


async def main(url: str, consumer: str, n: int, sleep_s: float, idle_ms: int, ready: str) -> None:
    opts = ConsumeOptions(count=20, block_ms=100, claim_idle_ms=idle_ms, claim_every_ms=100)
    processed = 0
    async with Blackboard.connect(url) as bb:
        derived = bb.scope("agent:crash:derived")
        async for batch in bb.consume("crash", consumer, options=opts):
            for ev in batch.events:
                if ev.scope != SOURCE:
                    continue  # the derived entries' own events (acked, no effect)
                await bb.client.hincrby(TIMES, ev.entry_id, 1)
                await derived.write(
                    {"from": ev.entry_id}, entry_id=deterministic_id("crash", ev.entry_id)
                )
                await bb.client.sadd(DONE, ev.entry_id)
                processed += 1
                if processed == 5:
                    Path(ready).write_text("ready")  # noqa: ASYNC240 (once, tiny)
                await asyncio.sleep(sleep_s)
            await batch.ack()
            if await bb.client.scard(DONE) >= n:
                return


if __name__ == "__main__":
    a = sys.argv
    asyncio.run(main(a[1], a[2], int(a[3]), float(a[4]), int(a[5]), a[6]))
