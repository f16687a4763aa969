"""First paint of the dashboard's views on the demo's data (issue 30: each view ready in
<= 1 s, the dataflow graph included).

    .venv/bin/python bench/dashboard_paint.py [--agents 3] [--steps 120] [--runs 5]
                                             [--serve SECONDS] [--json]

Starts a private redis-server (default user password-protected, as in production), a
gateway process and one worker process (``--role all``); installs the demo's agents and
runs their scripted steps (``blackboard demo``'s script and seed) until the workers have
consolidated them; then opens each view in headless Chromium ``--runs`` times with an
operator token and prints the time from navigation to the view's data shown (the page's
``body[data-ready=<view>]`` mark) and the view's own part (``window.__paint``). The raw
baseline of the same run is the page's shell alone: navigation to the login check done
(``/v1/dashboard/me`` answered), which every view pays first. Each view is opened from a
fresh page load (``about:blank`` in between), so no other view's requests are in flight.
``--serve`` keeps the gateway up for that many seconds afterwards and prints its URL and
tokens.
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
from tests.gateway import dashboard_support as ds  # noqa: E402
from tests.gateway.gateway_support import run_async, spawn_gateway  # noqa: E402
from tests.support_secure import secure_mode  # noqa: E402

CHROMIUM = os.environ.get("BLACKBOARD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def views(gw: Any, op: str) -> list[tuple[str, str]]:
    """(view, route) for every view, the entry view on a belief of the first agent and the
    timeline on agent1's table of contents (its root and years)."""
    import httpx

    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {op}"},
                      timeout=60) as c:
        facts = c.get("/v1/dashboard/beliefs").json()["facts"]
    f = facts[0]
    entry = f"entry/{quote(f['scope'], safe='')}/{f['current']['id']}"
    return [("flow", "flow"), ("map", "map"), ("events", "events"), ("entry", entry),
            ("beliefs", "beliefs"), ("workers", "workers"),
            ("timeline", "timeline?agent=agent1")]


def measure(gw: Any, op: str, runs: int) -> dict[str, dict[str, list[float]]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, list[float]]] = {}
    routes = views(gw, op)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        ctx = b.new_context(viewport={"width": 1280, "height": 860})
        ctx.add_init_script(f"sessionStorage.setItem('bb-dashboard-token', {json.dumps(op)})")
        page = ctx.new_page()
        for _ in range(runs):
            for view, route in [("shell", "nosuchview"), *routes]:
                page.goto("about:blank")  # each view from a fresh page load, nothing in flight
                t0 = time.perf_counter()
                page.goto(f"{gw.url}/#/{route}")
                if view == "shell":
                    page.wait_for_selector("#view", timeout=30_000)
                    own = 0.0
                else:
                    page.wait_for_selector(f"body[data-ready='{view}']", timeout=30_000)
                    own = float(page.evaluate(f"window.__paint[{view!r}]"))
                ms = (time.perf_counter() - t0) * 1000
                d = out.setdefault(view, {"total": [], "view": []})
                d["total"].append(ms)
                d["view"].append(own)
        b.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--serve", type=float, default=0.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    agents = [f"agent{i + 1}" for i in range(a.agents)]
    with RedisServer() as server:
        sec = secure_mode(server.url, (server.port,))
        gw = spawn_gateway(sec)
        try:
            async def seed() -> None:
                async with gw.admin() as bb:
                    await bb.ensure_groups(list(ds.CONSUMING_ROLES))
                    await ds.install_agents(bb, agents)

            run_async(seed)
            op = gw.operator_token()
            tokens = {ag: gw.token(ag, ["ops"]) for ag in agents}
            with ds.worker(gw):
                t0 = time.perf_counter()

                async def work() -> None:
                    async with gw.admin() as bb:
                        await asyncio.gather(*(ds.run_agent(bb, ag, a.steps) for ag in agents))
                        await ds.wait_for_learning(bb, 300)
                        await asyncio.sleep(5)  # the later edges (team, collective) fire

                asyncio.run(work())
                say(f"demo data: {len(agents)} agents x {a.steps} steps consolidated in "
                    f"{time.perf_counter() - t0:.0f}s")
                got = measure(gw, op, a.runs)
                load = os.getloadavg()
                if a.json:
                    print(json.dumps({"load": load, "paint_ms": got}))
                else:
                    print(f"first paint, navigation -> data shown, ms, {a.runs} runs "
                          f"(load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; shared machine):")
                    for view, d in got.items():
                        med = statistics.median(d["total"])
                        print(f"  {view:8} median {med:5.0f}  max {max(d['total']):5.0f}"
                              f"   in the view: median {statistics.median(d['view']):4.0f}")
                if a.serve:
                    say(f"serving {gw.url} for {a.serve:.0f}s; operator token {op}")
                    for ag, t in tokens.items():
                        say(f"  {ag} token {t}")
                    time.sleep(a.serve)
        finally:
            gw.stop()


if __name__ == "__main__":
    main()
