"""A second agent in its own process, for the quota attacks' latency bound: it writes and
reads its own scope until a line arrives on stdin, then prints each call's latency (s) as
JSON. Its own interpreter, as another agent would have: the attacking test's event loop and
its garbage collector are not in what it times, only Redis.

    python bystander_agent.py URL USERNAME PASSWORD SCOPE
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from blackboard import Blackboard


async def main(url: str, username: str, password: str, scope: str) -> None:
    loop = asyncio.get_running_loop()
    stop = loop.run_in_executor(None, sys.stdin.readline)
    lat: list[float] = []
    async with Blackboard.connect(url, partitions=8, username=username,
                                  password=password) as b:
        s = b.scope(scope)
        await s.get((await s.write({"note": "warm"})).id)  # the pool is open before timing
        print("ready", flush=True)
        while not stop.done():
            t0 = time.perf_counter()
            e = await s.write({"note": "still here"})
            await s.get(e.id)
            lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.005)
    print(json.dumps(lat), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
