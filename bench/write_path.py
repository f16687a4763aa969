"""Write path and event delivery of the blackboard against raw redis-py, same server, same run.

    .venv/bin/python bench/write_path.py [--n N] [--batch B] [--durability replicated] [--json]

Starts an embedded redis-server unless ``BLACKBOARD_REDIS_URL`` is set (choose the binary
with ``BLACKBOARD_REDIS_SERVER``). Measures:

* entries/s of ``scope.write_many`` (batches of B) and of sequential ``scope.write``,
  against a raw asyncio pipeline sending the same commands per entry (HSET entry with the
  same fields, ZADD ix, SADD and HINCRBY per tag, ZADD evict, XADD feed, XADD bus);
* write -> consumer delivery latency p50/p99 through ``bb.consume`` at a steady rate,
  against a raw XADD -> XREADGROUP BLOCK loop (send time carried in the event).

Targets: write_many >= 0.6x raw pipeline; delivery p99 <= 2x raw.

``--tracing`` also measures both write rates with OpenTelemetry tracing on (the ``[otel]``
extra: an SDK provider with a batch span processor whose exporter drops the spans, so the
figure is the cost of making spans and carrying their context, not of a network) against
off, alternating the two three times (medians).

``--durability replicated`` also measures both write rates under ``durability="replicated"``
(each write then waits for ``--wait-replicas`` replicas, WAIT on the same connection)
against the default's, alternating the two three times (medians): on an embedded server
it starts that many replicas on loopback ports first (with ``BLACKBOARD_REDIS_URL``, the
server must have them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aredis
from rich.console import Console
from rich.table import Table

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.raw_writes import (
    TAGS,
    bench_raw_pipeline,
    bench_raw_single,
    entry_value,
    latency_raw,
)
from blackboard import Blackboard, RedisServer, WriteRequest
from blackboard.ids import new_ulid


async def bench_write_many(bb: Blackboard, n: int, batch: int) -> float:
    s = bb.scope("bench:write_many")
    reqs = [WriteRequest(entry_value(i), tags=TAGS, metadata={"agent": "a1"}) for i in range(n)]
    t = time.perf_counter()
    for i in range(0, n, batch):
        await s.write_many(reqs[i : i + batch])
    return n / (time.perf_counter() - t)


async def bench_write_single(bb: Blackboard, n: int) -> float:
    s = bb.scope("bench:write_single")
    t = time.perf_counter()
    for i in range(n):
        await s.write(entry_value(i), tags=TAGS, metadata={"agent": "a1"})
    return n / (time.perf_counter() - t)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def latency_ours(bb: Blackboard, n: int, rate: float) -> list[float]:
    s = bb.scope("bench:latency")
    await bb.ensure_groups(["bench"])
    lat: list[float] = []
    sent: dict[str, float] = {}

    async def consumer() -> None:
        async for batch in bb.consume("bench", "c1", partitions=[s.partition], block_ms=1000):
            now = time.perf_counter()
            for ev in batch.events:
                if ev.entry_id in sent:
                    lat.append(now - sent[ev.entry_id])
            await batch.ack()
            if len(lat) >= n:
                return

    task = asyncio.create_task(consumer())
    await asyncio.sleep(0.3)
    for i in range(n):
        eid = new_ulid()
        sent[eid] = time.perf_counter()  # the send time, keyed by the id the event carries
        await s.write(entry_value(i), tags=TAGS, entry_id=eid)
        await asyncio.sleep(1 / rate)
    await asyncio.wait_for(task, 30)
    return lat


async def durability_cost(url: str, n: int, batch: int, n_single: int,
                          replicas: int, rounds: int = 3) -> dict[str, Any]:
    """write_many and sequential write rates under ``durability="replicated"`` against the
    default, on the same server, alternated ``rounds`` times (medians): a load that comes
    and goes on the machine then weighs on both sides alike."""
    async with Blackboard.connect(url, partitions=8) as local, Blackboard.connect(
        url, partitions=8, durability="replicated", wait_replicas=replicas
    ) as rep:
        for bb in (local, rep):
            await bench_write_many(bb, batch, batch)
        got: dict[str, list[float]] = {"many": [], "rep_many": [], "single": [],
                                       "rep_single": []}
        for _ in range(rounds):
            got["many"].append(await bench_write_many(local, n, batch))
            got["rep_many"].append(await bench_write_many(rep, n, batch))
            got["single"].append(await bench_write_single(local, n_single))
            got["rep_single"].append(await bench_write_single(rep, n_single))
    m = {k: statistics.median(v) for k, v in got.items()}
    return {"replicas": replicas, "rounds": rounds,
            "default_write_many": m["many"], "write_many": m["rep_many"],
            "default_write_single": m["single"], "write_single": m["rep_single"],
            "ratio_many": m["rep_many"] / m["many"],
            "ratio_single": m["rep_single"] / m["single"]}


def _tracing_on() -> None:
    """Tracing on into an SDK batch processor whose exporter drops what it is handed."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from blackboard import tracing

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    tracing.enable(provider)


async def tracing_cost(bb: Blackboard, n: int, batch: int, n_single: int,
                       rounds: int = 3) -> dict[str, Any]:
    """write_many and sequential write rates with tracing on against off, same client and
    server, alternated ``rounds`` times (medians)."""
    from blackboard import tracing

    got: dict[str, list[float]] = {"many": [], "on_many": [], "single": [], "on_single": []}
    for _ in range(rounds):
        got["many"].append(await bench_write_many(bb, n, batch))
        got["single"].append(await bench_write_single(bb, n_single))
        _tracing_on()
        try:
            got["on_many"].append(await bench_write_many(bb, n, batch))
            got["on_single"].append(await bench_write_single(bb, n_single))
        finally:
            tracing.disable()
    m = {k: statistics.median(v) for k, v in got.items()}
    return {"rounds": rounds, "off_write_many": m["many"], "on_write_many": m["on_many"],
            "off_write_single": m["single"], "on_write_single": m["on_single"],
            "ratio_many": m["on_many"] / m["many"], "ratio_single": m["on_single"] / m["single"],
            "all": got}


async def run(
    url: str, n: int, batch: int, n_single: int, n_lat: int, rate: float,
    replicas: int = 0, traced: bool = False,
) -> dict[str, Any]:
    r = aredis.Redis.from_url(url)
    await r.flushall()
    async with Blackboard.connect(url, partitions=8) as bb:
        # Warm up both sides (script load, connection pool, allocator).
        await bench_write_many(bb, batch, batch)
        await bench_raw_pipeline(r, batch, batch)
        raw_many = await bench_raw_pipeline(r, n, batch)
        ours_many = await bench_write_many(bb, n, batch)
        raw_single = await bench_raw_single(r, n_single)
        ours_single = await bench_write_single(bb, n_single)
        raw_lat = await latency_raw(r, n_lat, rate)
        ours_lat = await latency_ours(bb, n_lat, rate)
        trc = await tracing_cost(bb, n, batch, n_single) if traced else None
    rep = None
    if replicas:
        rep = await durability_cost(url, n, batch, n_single, replicas)
    info = await r.info("server")
    await r.aclose()
    ms = 1000.0
    out = {
        "redis_version": info["redis_version"],
        "n": n,
        "batch": batch,
        "n_single": n_single,
        "n_latency": n_lat,
        "rate_per_s": rate,
        "write_many": {"raw": raw_many, "ours": ours_many, "ratio": ours_many / raw_many},
        "write_single": {"raw": raw_single, "ours": ours_single, "ratio": ours_single / raw_single},
        "latency_ms": {
            "raw_p50": statistics.median(raw_lat) * ms,
            "raw_p99": _pct(raw_lat, 0.99) * ms,
            "ours_p50": statistics.median(ours_lat) * ms,
            "ours_p99": _pct(ours_lat, 0.99) * ms,
        },
    }
    lat = out["latency_ms"]
    lat["p99_ratio"] = lat["ours_p99"] / lat["raw_p99"]
    out["targets"] = {
        "write_many >= 0.6x raw": out["write_many"]["ratio"] >= 0.6,
        "delivery p99 <= 2x raw": lat["p99_ratio"] <= 2.0,
    }
    if rep is not None:
        out["replicated"] = rep
    if trc is not None:
        out["tracing"] = trc
    return out


def _print(res: dict[str, Any]) -> None:
    c = Console()
    t = Table(title=f"blackboard write path vs raw redis-py (Redis {res['redis_version']})")
    for col in ("measure", "raw", "ours", "ours / raw"):
        t.add_column(col, justify="right" if col != "measure" else "left")
    wm, ws, lat = res["write_many"], res["write_single"], res["latency_ms"]
    t.add_row(
        f"write_many entries/s (batch {res['batch']})",
        f"{wm['raw']:,.0f}",
        f"{wm['ours']:,.0f}",
        f"{wm['ratio']:.2f}",
    )
    t.add_row(
        "write entries/s (sequential)",
        f"{ws['raw']:,.0f}",
        f"{ws['ours']:,.0f}",
        f"{ws['ratio']:.2f}",
    )
    t.add_row(
        "delivery p50 ms",
        f"{lat['raw_p50']:.2f}",
        f"{lat['ours_p50']:.2f}",
        f"{lat['ours_p50'] / lat['raw_p50']:.2f}",
    )
    t.add_row(
        "delivery p99 ms",
        f"{lat['raw_p99']:.2f}",
        f"{lat['ours_p99']:.2f}",
        f"{lat['p99_ratio']:.2f}",
    )
    if "replicated" in res:
        rp = res["replicated"]
        t.add_row(f"write_many entries/s, default | replicated (WAIT {rp['replicas']})",
                  f"{rp['default_write_many']:,.0f}", f"{rp['write_many']:,.0f}",
                  f"{rp['ratio_many']:.2f}")
        t.add_row(f"write entries/s, default | replicated (WAIT {rp['replicas']})",
                  f"{rp['default_write_single']:,.0f}", f"{rp['write_single']:,.0f}",
                  f"{rp['ratio_single']:.2f}")
    if "tracing" in res:
        tr = res["tracing"]
        t.add_row("write_many entries/s, tracing off | on", f"{tr['off_write_many']:,.0f}",
                  f"{tr['on_write_many']:,.0f}", f"{tr['ratio_many']:.2f}")
        t.add_row("write entries/s, tracing off | on", f"{tr['off_write_single']:,.0f}",
                  f"{tr['on_write_single']:,.0f}", f"{tr['ratio_single']:.2f}")
    c.print(t)
    for name, ok in res["targets"].items():
        c.print(f"{'[green]met' if ok else '[red]MISSED'}[/]  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=20_000, help="entries for the write_many runs")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--single", type=int, default=3_000, help="entries for sequential writes")
    ap.add_argument("--latency-n", type=int, default=1_000)
    ap.add_argument("--rate", type=float, default=500.0, help="events/s for the latency runs")
    ap.add_argument("--durability", choices=("local", "replicated"), default="local",
                    help="replicated: also measure writes that wait for replicas (WAIT)")
    ap.add_argument("--wait-replicas", type=int, default=1, help="replicas to wait for")
    ap.add_argument("--tracing", action="store_true",
                    help="also measure writes with OpenTelemetry tracing on (the [otel] extra)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    replicas = a.wait_replicas if a.durability == "replicated" else 0
    url = os.environ.get("BLACKBOARD_REDIS_URL")
    servers: list[RedisServer] = []
    try:
        if not url:
            servers.append(RedisServer().start())
            url = servers[0].url
            for _ in range(replicas):
                servers.append(RedisServer(extra_args=(
                    "--replicaof", "127.0.0.1", str(servers[0].port))).start())
            _await_replicas(url, replicas)
        res = asyncio.run(run(url, a.n, a.batch, a.single, a.latency_n, a.rate, replicas,
                              a.tracing))
    finally:
        for s in reversed(servers):
            s.stop()
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        _print(res)


def _await_replicas(url: str, n: int, timeout: float = 30.0) -> None:
    import redis

    r = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + timeout
        while True:  # attached and past the initial sync
            info = r.info("replication")
            if sum(1 for i in range(n) if info.get(f"slave{i}", {}).get("state") == "online") == n:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"{n} replica(s) did not come online in {timeout:.0f}s")
            time.sleep(0.1)
    finally:
        r.close()


if __name__ == "__main__":
    main()
