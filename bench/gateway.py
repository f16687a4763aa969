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
``python -m gateway`` (rate limit off) over HTTP/1.1 keep-alive. Progress goes to stderr;
the report (or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

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


async def paired(a: Callable[[int], Awaitable[Any]], b: Callable[[int], Awaitable[Any]],
                 n: int, warmup: int = 20) -> tuple[dict[str, float], dict[str, float]]:
    """Both sides on the same query, one right after the other (the first alternating),
    so a busy machine slows both alike."""
    for i in range(warmup):
        await a(i)
        await b(i)
    ta: list[float] = []
    tb: list[float] = []
    for i in range(n):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            t0 = time.perf_counter()
            await fn(i)
            out.append(time.perf_counter() - t0)
    return lat(ta), lat(tb)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """``python -m gateway`` with ``workers`` processes on a free port, rate limit off."""

    def __init__(self, redis_url: str, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile("w+b", prefix="gw-bench-", suffix=".log",  # noqa: SIM115
                                               delete=False)
        env = {**os.environ, "BLACKBOARD_GATEWAY_REDIS_URL": redis_url,
               "BLACKBOARD_GATEWAY_RATE": "0", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "--port", str(self.port),
             "--workers", str(workers)], cwd=ROOT, env=env, stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {Path(self.log.name).read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("gateway did not answer /healthz in 90 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


async def _load(http: httpx.AsyncClient, op: str, clients: int, seconds: float,
                queries: list[str]) -> dict[str, float]:
    """``clients`` callers doing ``op`` back to back for ``seconds``."""
    done, errors, lats = 0, 0, []
    until = time.monotonic() + seconds

    async def one(c: int) -> None:
        nonlocal done, errors
        i = 0
        while time.monotonic() < until:
            t0 = time.perf_counter()
            if op == "store":
                r = await http.post("/v1/memories", json={
                    "value": f"client {c} op {i}: {queries[i % len(queries)]}",
                    "level": "stm", "tags": ["load"]})
            else:
                r = await http.post("/v1/recall", json={
                    "query": queries[(c + i) % len(queries)], "max_results": 10})
            lats.append(time.perf_counter() - t0)
            if r.status_code < 300:
                done += 1
            else:
                errors += 1
            i += 1

    t0 = time.monotonic()
    await asyncio.gather(*(one(c) for c in range(clients)))
    took = time.monotonic() - t0
    return {f"{op}_per_s": round(done / took, 1), f"{op}_p50_ms": round(pct(lats, 50) * 1e3, 2),
            f"{op}_errors": errors}


async def throughput(url: str, token: str, clients: int, seconds: float,
                     queries: list[str]) -> dict[str, float]:
    """``clients`` concurrent callers, each on its own connection, storing for
    ``seconds`` then recalling for ``seconds``: completed operations per second."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120,
                                 headers={"Authorization": f"Bearer {token}"}) as http:
        # Untimed: every process opens the token's pool and builds its recall index.
        await asyncio.gather(*(http.post("/v1/recall", json={"query": q})
                               for q in queries[:clients]))
        return (await _load(http, "store", clients, seconds, queries)
                | await _load(http, "recall", clients, seconds, queries))


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
                    httpx.AsyncClient(base_url=gw.url, timeout=60, headers={
                        "Authorization": f"Bearer {token}"}) as http):
            say(f"storing {a.entries} memories ...")
            docs = texts(a.entries, rng)
            for i in range(0, len(docs), 100):
                await asyncio.gather(*(mem.store(d, "semantic", tags={f"t{j % 7}"})
                                       for j, d in enumerate(docs[i:i + 100])))

            async def lib_store(i: int) -> None:
                await mem.store(f"paired note {i}", "stm", tags={"paired"})

            async def rest_store(i: int) -> None:
                r = await http.post("/v1/memories", json={
                    "value": f"paired note {i}", "level": "stm", "tags": ["paired"]})
                r.raise_for_status()

            # Writes first: once a side has recalled, its retriever follows the scopes and
            # embeds every new entry in that process, which would load the other side too.
            say("store in process and over REST, alternating ...")
            res["inproc_store"], res["rest_store"] = await paired(lib_store, rest_store,
                                                                  a.queries)

            async def lib(i: int) -> None:
                await mem.recall(queries[i % len(queries)], limit=10)

            async def rest(i: int) -> None:
                r = await http.post("/v1/recall", json={"query": queries[i % len(queries)],
                                                        "max_results": 10})
                r.raise_for_status()

            say("recall in process and over REST, alternating ...")
            res["inproc"], res["rest"] = await paired(lib, rest, a.queries)
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

    s, gs = r["inproc_store"], r["rest_store"]
    lines = [
        f"gateway bench: {r['entries']} memories, {r['queries']} queries, "
        f"{r['clients']} clients x {r['seconds']:g} s",
        "",
        f"{'latency':<34}{'p50 ms':>10}{'p99 ms':>10}{'vs lib p50':>12}",
        row("AgentMemory.recall (in process)", i, i),
        row("REST POST /v1/recall", g, i),
        row("MCP tools/call recall", m["recall"], i),
        row("AgentMemory.store (in process)", s, s),
        row("REST POST /v1/memories", gs, s),
        row("MCP tools/call remember", m["remember"], s),
        f"  REST - in process, recall p50: {r['rest_minus_inproc_p50_ms']:+.2f} ms "
        f"(target <= {TARGET_MS} ms: {'met' if r['target_met'] else 'MISSED'})",
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
