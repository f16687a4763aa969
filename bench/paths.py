"""How many of our source files a write and a recall pass through.

Traces, with ``sys.setprofile``, an agent's first write (which also registers its scope),
its next write, and a recall made after one warm-up recall (index bootstrap and model
load done), and lists the files of our packages whose functions ran (Lua scripts run in
Redis and are not counted). A design check, not a timing:
``docs/architecture.md`` quotes these counts, and this script reproduces them on any
checkout (run it from the checkout's root).

    python bench/paths.py [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path.cwd().resolve()
PACKAGES = ("blackboard", "memory", "retrieval", "consolidation", "workers", "gateway", "cli")


def _ours(filename: str) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    return str(rel) if rel.parts and rel.parts[0] in PACKAGES else None


class _Files:
    """Profile hook: the functions of our files run by the traced tasks (the call's own
    task and the tasks it starts). Background loops of the process (index followers,
    relays, embedding write-back) are other flows and are left out."""

    def __init__(self, tasks: set[asyncio.Task[Any]]) -> None:
        self.seen: dict[str, set[str]] = {}
        self.tasks = tasks

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and asyncio.current_task() in self.tasks:
            f = _ours(frame.f_code.co_filename)
            if f is not None:
                self.seen.setdefault(f, set()).add(frame.f_code.co_name)


async def _traced(coro_fn: Any) -> dict[str, list[str]]:
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[Any]] = set()
    files = _Files(tasks)

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kw)
        if asyncio.current_task() in tasks:
            tasks.add(task)
        return task

    loop.set_task_factory(factory)
    main = asyncio.ensure_future(coro_fn())
    tasks.add(main)
    sys.setprofile(files)
    try:
        await main
    finally:
        sys.setprofile(None)
        loop.set_task_factory(None)
    return {f: sorted(fns) for f, fns in sorted(files.seen.items())}


async def main() -> dict[str, dict[str, list[str]]]:
    from blackboard import Blackboard, RedisServer
    from memory import AgentMemory

    with RedisServer() as server:
        async with Blackboard.connect(server.url) as bb:
            mem = AgentMemory(bb, "paths")
            try:
                first = await _traced(
                    lambda: mem.store({"text": "the first write"}, tags={"note"}))
                await mem.recall("warm up")
                write = await _traced(
                    lambda: mem.store({"text": "the second write"}, tags={"note"}))
                recall = await _traced(lambda: mem.recall("second write"))
            finally:
                await mem.aclose()
    return {"first write": first, "write": write, "recall": recall}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON for programs")
    ap.add_argument("--functions", action="store_true", help="name the functions that ran")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    out = asyncio.run(main())
    if args.json:
        print(json.dumps(out))
    else:
        for flow, files in out.items():
            print(f"{flow}: {len(files)} files")
            for f, fns in files.items():
                print(f"  {f}" + (f": {', '.join(fns)}" if args.functions else ""))
