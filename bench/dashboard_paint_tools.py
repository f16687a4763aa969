"""First paint of the dashboard's search, entry-list, charts and tokens views (issue 30
item 5) on the demo's data, against the memory map's in the same run (the baseline).

    .venv/bin/python bench/dashboard_paint_tools.py [--runs 5] [--json]

Starts a private redis-server in secure mode and a gateway process, runs the demo's two
scripted agents (60 steps each, as `blackboard demo` seeds them) with one real worker
consolidating them into summaries, facts and procedures (the data the dashboard tests
use), warms each token's first recall (its index is built once per Redis user: not a
paint), then loads each view ``--runs`` times in headless Chromium, each time in a fresh
page: milliseconds from navigation to the view's data shown (``body[data-ready]``), and
the view's own part (from its route starting). Prints the median and worst per view, its
ratio to the map's median, the CPU seconds the gateway process used during the view's
loads (its own work, whatever else loads the machine: the first view, the map, is loaded
while the gateway's index may still be embedding what the demo wrote), the CPU seconds the
worker used meanwhile (how busy it was: the index role embeds the demo's backlog, which
shares the cores with the page), and the load average; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from blackboard import RedisServer  # noqa: E402
from tests.gateway.dashboard_support import (  # noqa: E402
    AGENTS,
    dead_letter_one,
    install,
    run_agent,
    wait_for_learning,
    worker,
)
from tests.gateway.gateway_support import spawn_gateway  # noqa: E402
from tests.support_secure import secure_mode  # noqa: E402


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def seed(gw: Any) -> None:
    async def go() -> None:
        async with gw.admin() as bb:
            await install(bb)
            for a in AGENTS:
                await run_agent(bb, a)
            await wait_for_learning(bb)
            await dead_letter_one(bb)

    asyncio.run(go())


def cpu_s(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(url: str, token: str, route: str, view: str, runs: int,
            browser: Any) -> tuple[list[float], list[float]]:
    total, own = [], []
    for _ in range(runs):
        ctx = browser.new_context(viewport={"width": 1280, "height": 860})
        page = ctx.new_page()
        page.add_init_script(f"sessionStorage.setItem('bb-dashboard-token', {json.dumps(token)})")
        t0 = time.perf_counter()
        page.goto(f"{url}/#/{route}")
        page.wait_for_selector(f"body[data-ready='{view}']", timeout=60_000)
        total.append((time.perf_counter() - t0) * 1000)
        own.append(float(page.evaluate(f"window.__paint[{view!r}]")))
        ctx.close()
    return total, own


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = (os.environ.get("BLACKBOARD_CHROMIUM") or shutil.which("chromium")
                or "/usr/bin/chromium")
    with RedisServer() as server:
        secure = secure_mode(server.url, (server.port,))
        gw = spawn_gateway(secure)
        try:
            say("seeding the demo's data (2 agents x 60 steps, one worker consolidating)…")
            t0 = time.perf_counter()
            with worker(gw) as wp:
                seed(gw)
                op, a1 = gw.operator_token(), gw.token("agent1", ["ops"])
                say(f"seeded in {time.perf_counter() - t0:.0f} s; warming each token's recall…")
                for t in (op, a1):
                    with gw.client(t) as c:
                        c.get("/v1/dashboard/search", params={"q": "Acme"}, timeout=600)
                scope = quote("agent:agent1:working", safe="")
                views = [("map", "map", op), ("search", f"search?q={quote('Acme invoice')}", a1),
                         ("entry", f"entry/{scope}", a1),
                         ("entry", f"entry/{scope}?q=Acme", a1),
                         ("charts", "charts", op), ("charts", "charts", a1),
                         ("tokens", "tokens", op)]
                rows: list[dict[str, Any]] = []
                with sync_playwright() as p:
                    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                    for view, route, token in views:
                        who = "operator" if token == op else "agent1"
                        c0, w0 = cpu_s(gw.proc.pid), cpu_s(wp.pid)
                        total, own = measure(gw.url, token, route, view, args.runs, browser)
                        cpu, wcpu = cpu_s(gw.proc.pid) - c0, cpu_s(wp.pid) - w0
                        rows.append({"view": view, "route": route, "token": who,
                                     "median_ms": statistics.median(total),
                                     "max_ms": max(total), "own_ms": statistics.median(own),
                                     "gateway_cpu_s": cpu, "worker_cpu_s": wcpu})
                        say(f"  {route} ({who}): {statistics.median(total):.0f} ms")
                    browser.close()
        finally:
            gw.stop()
    base = rows[0]["median_ms"]
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"runs": args.runs, "load": load, "rows": rows}))
        return
    print(f"first paint over {args.runs} fresh loads each (load average {load[0]:.1f}, "
          f"{load[1]:.1f}, {load[2]:.1f}; shared machine):")
    print(f"{'view':<34} {'median':>7} {'worst':>7} {'in view':>7} {'x map':>5} "
          f"{'gw cpu':>6} {'wk cpu':>6}")
    for r in rows:
        name = f"{r['route'][:23]} ({r['token']})"
        print(f"{name:<34} {r['median_ms']:>5.0f}ms {r['max_ms']:>5.0f}ms "
              f"{r['own_ms']:>5.0f}ms {r['median_ms'] / base:>5.2f} "
              f"{r['gateway_cpu_s']:>5.2f}s {r['worker_cpu_s']:>5.2f}s")


if __name__ == "__main__":
    main()
