"""Issue 23 item 1 on the gateway's ``/metrics``: per role and partition, the age of its
reader's last progress, from the workers' heartbeat records, read from Redis at most every
few seconds (a scrape in between reuses what was read)."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from blackboard import Blackboard
from gateway.progress_ages import ProgressAges
from workers.heartbeat import Heartbeat


def _ages(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    out = {}
    for line in generate_latest(registry).decode().splitlines():
        if line.startswith("blackboard_progress_age_seconds{"):
            labels, value = line.split("} ")
            kv = dict(x.split("=") for x in labels.split("{")[1].split(","))
            out[(kv["role"].strip('"'), kv["partition"].strip('"'))] = float(value)
    return out


async def test_progress_ages_per_role_and_partition_read_at_most_every_few_s(
        bb: Blackboard) -> None:
    now = bb.now_ms()
    await Heartbeat(bb, "w1", "summarize", 1000).beat(
        {0, 1}, {}, progress={0: now - 2000, 1: now - 90_000})
    # partition 1 changing hands: the newer reader's progress counts
    await Heartbeat(bb, "w2", "summarize", 1000).beat({1}, {}, progress={1: now - 1000})
    await Heartbeat(bb, "w3", "index", 1000).beat({0}, {}, progress={0: now - 500})
    reg = CollectorRegistry()
    ages = ProgressAges(reg, every_s=0.5)
    assert _ages(reg) == {}  # nothing read yet: no series, not zeros
    await ages.refresh(bb)
    got = _ages(reg)
    assert set(got) == {("summarize", "0"), ("summarize", "1"), ("index", "0")}
    assert 2.0 <= got[("summarize", "0")] < 4.0
    assert 1.0 <= got[("summarize", "1")] < 3.0
    assert 0.5 <= got[("index", "0")] < 2.5
    # scrapes within every_s reuse the records; the ages still grow
    await asyncio.sleep(0.2)
    await ages.refresh(bb)
    assert ages.reads == 1
    assert _ages(reg)[("summarize", "0")] >= got[("summarize", "0")] + 0.15
    await asyncio.sleep(0.4)
    await ages.refresh(bb)
    assert ages.reads == 2
    # no service connection (an insecure local gateway without a rate limit): no read
    await ProgressAges(CollectorRegistry()).refresh(None)
