"""Concurrency helper: one OS process writing, re-tagging and deleting in one scope.

Usage: writer.py URL SCOPE N SEED
"""

from __future__ import annotations

import asyncio
import random
import sys

from blackboard import Blackboard, ScopeFull, WriteRequest

TAGS = ["a", "b", "c", "d", "e"]


async def main(url: str, scope_id: str, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    async with Blackboard.connect(url) as bb:
        s = bb.scope(scope_id)
        mine: list[str] = []
        for i in range(n):
            tags = set(rnd.sample(TAGS, rnd.randint(0, 3)))
            op = rnd.random()
            try:
                if op < 0.15 and mine:
                    await s.update(rnd.choice(mine), tags=set(rnd.sample(TAGS, 2)))
                elif op < 0.25 and mine:
                    await s.delete(mine.pop(rnd.randrange(len(mine))))
                elif op < 0.35:
                    es = await s.write_many([WriteRequest(i, tags=tags) for _ in range(5)])
                    mine += [e.id for e in es]
                else:
                    key = f"k{rnd.randint(0, 20)}" if op > 0.9 else None
                    mine.append((await s.write(i, tags=tags, key=key)).id)
            except ScopeFull:
                pass
            except Exception as exc:  # NotFound: another process evicted or deleted it
                if type(exc).__name__ != "NotFound":
                    raise


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
