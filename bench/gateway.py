"""The gateway's cost over the library (issue 14): REST recall p50/p99 against in-process
``AgentMemory.recall`` on the same data (target: within 1.5 ms at p50), store and recall
throughput of 64 concurrent clients against one gateway process and against two, and the
latency of an MCP tool call.

    .venv/bin/python bench/gateway.py [--entries 2000] [--queries 200] [--clients 64]
                                      [--seconds 5] [--json]

Starts an embedded redis-server unless ``BLACKBOARD_REDIS_URL`` is set (its default user
must be an admin), makes one agent token, stores ``--entries`` memories through the
library, then measures each side with the same queries: the library in this process on a
connection logged in as the token's Redis user (what the gateway does per request), and
``python -m gateway`` with its rate limit on (a rate no caller reaches, so none is
refused, and the default burst, so the default lease: one request in five pays the token
bucket's round trip, the others spend what it leased: :mod:`blackboard.ratelimit`). REST
is timed twice: with a minimal HTTP/1.1 keep-alive client (:class:`Wire`: the server and
the wire, which the target is about) and through ``RemoteMemory`` (httpx: what a Python
caller also pays for its client library). The sides take turns in blocks of ``BLOCK``
calls: a block right after another process's keeps the cores' state of its own
(onnxruntime's threads spin for a while after a run), and drift reaches every side alike.
Each REST recall's wait is also taken less the recall's own time in the gateway (its
``Server-Timing`` header): what the gateway and the wire add, free of the difference
between two processes' model speeds that the REST - in-process figure carries
(``bench/process_noise.py``: ±0.4 ms). The target is on the REST - in-process figure.
Progress goes to stderr; the report (or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gateway_harness import Gateway, Wire, drained  # noqa: E402
from blackboard import Blackboard, RedisServer  # noqa: E402

AGENT, TEAM = "bench", "benchteam"
TARGET_MS = 1.5
WORDS = ["invoice", "payment", "deploy", "rollback", "latency", "customer", "refund",
         "schema", "migration", "cache", "outage", "alert", "budget", "contract", "renewal",
         "vendor", "ticket", "sprint", "review", "release", "backup", "restore", "quota",
         "region", "failover", "audit", "token", "rotation", "incident", "pager", "metric"]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def texts(n: int, rng: random.Random) -> list[str]:
    return [f"note {i}: {' '.join(rng.sample(WORDS, 6))} for team {i % 13}" for i in range(n)]


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else float("nan")


def lat(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(xs, 50) * 1e3, 3), "p99_ms": round(pct(xs, 99) * 1e3, 3),
            "n": len(xs)}


async def timed(fn: Callable[[int], Awaitable[Any]], n: int, warmup: int = 10) -> list[float]:
    for i in range(warmup):
        await fn(i)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await fn(i)
        out.append(time.perf_counter() - t0)
    return out


BLOCK = 25


async def in_blocks(sides: dict[str, Callable[[int], Awaitable[Any]]], n: int,
                    warmup: int = 10, settle: Callable[[], Awaitable[Any]] | None = None,
                    ) -> dict[str, dict[str, float]]:
    """Each side ``n`` times on the same inputs, the sides taking turns ``BLOCK`` calls at
    a time (the first side of each round rotating), so drift reaches each alike; after the
    warm-up, ``settle()`` (e.g. until the recall indexes have embedded their backlog)."""
    names = list(sides)
    for name in names:
        for i in range(warmup):
            await sides[name](i)
    if settle is not None:
        await settle()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r, start in enumerate(range(0, n, BLOCK)):
        for name in names[r % len(names):] + names[:r % len(names)]:
            for i in range(start, min(n, start + BLOCK)):
                t0 = time.perf_counter()
                await sides[name](i)
                times[name].append(time.perf_counter() - t0)
    return {name: lat(ts) for name, ts in times.items()}


async def _load(wires: list[Wire], op: str, seconds: float,
                queries: list[str]) -> dict[str, float]:
    """One caller per connection of ``wires`` doing ``op`` back to back for ``seconds``."""
    done, errors, lats = 0, 0, []
    until = time.monotonic() + seconds

    async def one(c: int, wire: Wire) -> None:
        nonlocal done, errors
        i = 0
        while time.monotonic() < until:
            t0 = time.perf_counter()
            if op == "store":
                status, _ = await wire.post("/v1/memories", {
                    "value": f"client {c} op {i}: {queries[i % len(queries)]}",
                    "level": "stm", "tags": ["load"]})
            else:
                status, _ = await wire.post("/v1/recall", {
                    "query": queries[(c + i) % len(queries)], "max_results": 10})
            lats.append(time.perf_counter() - t0)
            if status < 300:
                done += 1
            else:
                errors += 1
            i += 1

    t0 = time.monotonic()
    await asyncio.gather(*(one(c, w) for c, w in enumerate(wires)))
    took = time.monotonic() - t0
    return {f"{op}_per_s": round(done / took, 1), f"{op}_p50_ms": round(pct(lats, 50) * 1e3, 2),
            f"{op}_errors": errors}


async def throughput(url: str, token: str, clients: int, seconds: float,
                     queries: list[str]) -> dict[str, float]:
    """``clients`` concurrent callers, each on its own keep-alive connection (a
    :class:`Wire`: httpx's pool spends more CPU per request than the gateway does, and
    would measure itself), storing for ``seconds`` then recalling for ``seconds``:
    completed operations per second."""
    async with AsyncExitStack() as stack:
        wires = [await stack.enter_async_context(Wire(url, token)) for _ in range(clients)]
        # Untimed: every process opens the token's pool and builds its recall index.
        await asyncio.gather(*(w.post("/v1/recall", {"query": q})
                               for w, q in zip(wires, queries * clients, strict=False)))
        await drained(url)
        out = await _load(wires, "store", seconds, queries)
        # What the stores left the recall indexes to embed, before recall is timed: the
        # model's pace, not the gateway's (the gauge shows it in production).
        out["embed_drain_s"] = round(await drained(url), 1)
        return out | await _load(wires, "recall", seconds, queries)


async def mcp_latency(url: str, token: str, queries: list[str], n: int) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with http, Client(streamable_http_client(url + "/mcp", http_client=http)) as c:
        async def recall(i: int) -> None:
            r = await c.call_tool("recall", {"query": queries[i % len(queries)]})
            assert not r.is_error, r.content

        async def remember(i: int) -> None:
            r = await c.call_tool("remember", {"content": f"mcp note {i}", "level": "stm"})
            assert not r.is_error, r.content

        return {"recall": lat(await timed(recall, n)),
                "remember": lat(await timed(remember, n))}


async def run(url: str, a: argparse.Namespace) -> dict[str, Any]:
    from gateway.tokens import create_token, parse_token
    from memory import AgentMemory
    from memory.remote import RemoteMemory

    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(a.queries)]
    async with Blackboard.connect(url) as admin:
        _, token = await create_token(admin, AGENT, [TEAM])
    claims = parse_token(token)
    res: dict[str, Any] = {"entries": a.entries, "queries": a.queries,
                           "clients": a.clients, "seconds": a.seconds}
    say("one gateway process ...")
    gw = Gateway(url, 1)
    try:
        async with (Blackboard.connect(url, username=claims.user,
                                       password=claims.password) as bb,
                    AgentMemory(bb, AGENT, [TEAM]) as mem,
                    Wire(gw.url, token) as wire,
                    RemoteMemory(gw.url, token) as remote):
            say(f"storing {a.entries} memories ...")
            docs = texts(a.entries, rng)
            for i in range(0, len(docs), 100):
                await asyncio.gather(*(mem.store(d, "semantic", tags={f"t{j % 7}"})
                                       for j, d in enumerate(docs[i:i + 100])))

            async def lib_store(i: int) -> None:
                await mem.store(f"paired note {i}", "stm", tags={"paired"})

            async def rest_store(i: int) -> None:
                status, body = await wire.post("/v1/memories", {
                    "value": f"paired note {i}", "level": "stm", "tags": ["paired"]})
                assert status == 201, body

            async def remote_store(i: int) -> None:
                await remote.store(f"paired note {i}", "stm", tags={"paired"})

            # Writes first: once a side has recalled, its retriever follows the scopes and
            # embeds every new entry in that process, which would load the other side too.
            say("store in process and over REST, in turns ...")
            got = await in_blocks({"inproc_store": lib_store, "rest_store": rest_store,
                                   "remote_store": remote_store}, a.queries)
            res.update(got)

            async def lib(i: int) -> None:
                await mem.recall(queries[i % len(queries)], max_results=10)

            beside: list[float] = []  # each REST recall's wait less its Server-Timing

            async def rest(i: int) -> None:
                t0 = time.perf_counter()
                status, body = await wire.post("/v1/recall", {
                    "query": queries[i % len(queries)], "max_results": 10})
                assert status == 200 and wire.recall_s is not None, body
                beside.append(time.perf_counter() - t0 - wire.recall_s)

            async def remote_recall(i: int) -> None:
                await remote.recall(queries[i % len(queries)], max_results=10)

            say("recall in process and over REST, in turns ...")
            # Both recall indexes bootstrap on their first recall and embed the entries
            # in the background: timed once that is done, as a steady state.
            res.update(await in_blocks({"inproc": lib, "rest": rest, "remote": remote_recall},
                                       a.queries, settle=lambda: drained(gw.url, mem)))
            # The timed calls only (the warm-up's come first): what the gateway and the
            # wire add to the recall in the gateway's own process, free of the two
            # processes' model speeds (bench/process_noise.py).
            res["rest_beside_recall"] = lat(beside[-a.queries:])
        say("MCP tool calls ...")
        res["mcp"] = await mcp_latency(gw.url, token, queries, max(20, a.queries // 2))
        say(f"{a.clients} clients against one process ...")
        res["one_process"] = await throughput(gw.url, token, a.clients, a.seconds, queries)
    finally:
        gw.stop()
    say(f"{a.clients} clients against two processes ...")
    gw = Gateway(url, 2)
    try:
        res["two_processes"] = await throughput(gw.url, token, a.clients, a.seconds, queries)
    finally:
        gw.stop()
    res["rest_minus_inproc_p50_ms"] = round(res["rest"]["p50_ms"] - res["inproc"]["p50_ms"], 3)
    res["remote_minus_inproc_p50_ms"] = round(
        res["remote"]["p50_ms"] - res["inproc"]["p50_ms"], 3)
    res["target_met"] = res["rest_minus_inproc_p50_ms"] <= TARGET_MS
    return res


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def report(r: dict[str, Any]) -> str:
    i, g, m = r["inproc"], r["rest"], r["mcp"]
    one, two = r["one_process"], r["two_processes"]
    def row(label: str, x: dict[str, float], base: dict[str, float] | None) -> str:
        vs = _ratio(x["p50_ms"], base["p50_ms"]) if base else ""
        return f"{'  ' + label:<34}{x['p50_ms']:>10.2f}{x['p99_ms']:>10.2f}{vs:>12}"

    s, gs, rs = r["inproc_store"], r["rest_store"], r["remote_store"]
    lines = [
        f"gateway bench: {r['entries']} memories, {r['queries']} queries, "
        f"{r['clients']} clients x {r['seconds']:g} s",
        "",
        f"{'latency':<34}{'p50 ms':>10}{'p99 ms':>10}{'vs lib p50':>12}",
        row("AgentMemory.recall (in process)", i, i),
        row("REST POST /v1/recall", g, i),
        row("RemoteMemory.recall (httpx)", r["remote"], i),
        row("MCP tools/call recall", m["recall"], i),
        row("AgentMemory.store (in process)", s, s),
        row("REST POST /v1/memories", gs, s),
        row("RemoteMemory.store (httpx)", rs, s),
        row("MCP tools/call remember", m["remember"], s),
        f"  REST - in process, recall p50: {r['rest_minus_inproc_p50_ms']:+.2f} ms "
        f"(target <= {TARGET_MS} ms: {'met' if r['target_met'] else 'MISSED'})",
        f"  RemoteMemory (httpx) - in process: {r['remote_minus_inproc_p50_ms']:+.2f} ms",
        f"  REST beside its own recall (Server-Timing): "
        f"+{r['rest_beside_recall']['p50_ms']:.2f} ms p50",
        "",
        f"{'throughput, ' + str(r['clients']) + ' clients':<34}{'1 process':>12}"
        f"{'2 processes':>13}{'2 / 1':>8}",
    ]
    for op in ("store", "recall"):
        lines.append(f"{'  ' + op + ' ops/s':<34}{one[op + '_per_s']:>12.0f}"
                     f"{two[op + '_per_s']:>13.0f}"
                     f"{_ratio(two[op + '_per_s'], one[op + '_per_s']):>8}")
        lines.append(f"{'  ' + op + ' p50 ms under load':<34}{one[op + '_p50_ms']:>12.1f}"
                     f"{two[op + '_p50_ms']:>13.1f}")
    lines.append(f"{'  embedding the stores, then s':<34}{one['embed_drain_s']:>12.1f}"
                 f"{two['embed_drain_s']:>13.1f}")
    errs = sum(x[k] for x in (one, two) for k in ("store_errors", "recall_errors"))
    if errs:
        lines.append(f"  failed requests under load: {errs}")
    lines.append(f"  ({os.cpu_count()} CPU cores on this machine)")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if min(a.entries, a.queries, a.clients) < 1 or a.seconds <= 0:
        ap.error("--entries, --queries, --clients must be >= 1 and --seconds > 0")
    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL") or stack.enter_context(RedisServer()).url
        res = asyncio.run(run(url, a))
    print(json.dumps(res) if a.json else report(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
