"""Demo-like data for the dashboard tests: two agents of one team run the demo's scripted
steps (actions through ``@mem.observe``, observations, one fact that changes), one real
worker process (``--role all``) consolidates them into summaries, facts and procedures,
and one event is dead-lettered through the consumer path so the workers view has a dead
letter to re-drive."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from blackboard import Blackboard
from blackboard.entry import decode_event
from blackboard.keys import PartitionKeys
from cli.demo import WORKER_ENV, install_agents
from cli.demo import run_agent as demo_agent
from cli.supervisor import worker_command, worker_env
from tests.gateway.gateway_support import GatewayProc
from workers.roles import CONSUMING_ROLES


@dataclass
class Tokens:
    """A gateway process and the tokens a dashboard test drives it with: an operator's and
    two agents' of one team; ``api`` calls it as one of them, a status >= 300 failing."""

    gw: GatewayProc
    op: str
    a1: str
    a2: str
    #: seconds an API call may take (on a loaded machine a first recall builds an index)
    api_timeout: ClassVar[float] = 30

    def api(self, token: str, method: str, path: str, timeout: float | None = None,
            **kw: Any) -> Any:
        with self.gw.client(token) as c:
            r = c.request(method, path, timeout=self.api_timeout if timeout is None
                          else timeout, **kw)
        assert r.status_code < 300, r.text
        return r.json() if r.content else None


AGENTS = ("agent1", "agent2")
STEPS = 60
#: The throwaway consumer group that dead-letters one event (never a worker role).
DLQ_GROUP = "dashtest"


def admin(gw: GatewayProc) -> Any:
    return gw.admin()


async def install(bb: Blackboard) -> None:
    await bb.ensure_groups(list(CONSUMING_ROLES))
    await install_agents(bb, list(AGENTS))


async def run_agent(bb: Blackboard, name: str, steps: int = STEPS) -> int:
    """The demo's agent loop (the same script seed as ``blackboard demo``)."""
    return await demo_agent(bb, name, steps, seed=7)


async def dead_letter_one(bb: Blackboard) -> str:
    """Read one bus event with a throwaway group and dead-letter it the way a consumer
    does after its handler failed; -> the event's bus id."""
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        if not await bb.client.xlen(pk.bus):
            continue
        await bb.bus(p).ensure_group(DLQ_GROUP)
        got = await bb.client.xreadgroup(DLQ_GROUP, "t", {pk.bus: ">"}, count=1)
        sid, fields = got[0][1][0]
        ev = decode_event(sid, fields, p)
        assert await bb.bus(p).dead_letter(DLQ_GROUP, ev, 5, "handler failed: test poison")
        return ev.id
    raise AssertionError("no bus event to dead-letter")


@contextlib.contextmanager
def worker(gw: GatewayProc) -> Iterator[subprocess.Popen[bytes]]:
    env = worker_env(gw.redis.admin_url) | WORKER_ENV
    log = gw.log.with_suffix(".worker.log")
    with log.open("wb") as out:
        p = subprocess.Popen(worker_command("all"), env=env, stdout=out,
                             stderr=subprocess.STDOUT)
    try:
        yield p
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


async def wait_for_learning(bb: Blackboard, seconds: float = 150) -> tuple[int, int]:
    """Poll until agent1 has a semantic fact and a procedure; -> (facts, procedures)."""
    deadline = time.monotonic() + seconds
    facts = procs = 0
    while time.monotonic() < deadline:
        facts = await bb.scope("agent:agent1:ltm:semantic").count()
        procs = await bb.scope("agent:agent1:ltm:procedural").count()
        if facts and procs:
            return facts, procs
        await asyncio.sleep(1)
    raise AssertionError(f"no consolidation in {seconds}s: {facts} facts, {procs} procedures")
