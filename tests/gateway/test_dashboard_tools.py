"""The dashboard's tools (issue 30 item 5) in headless Chromium against a real gateway
process: the header's search box leads to an entry, a scope's entries page by cursor and
filter by text, the charts draw the gateway's samples (an agent sees only its own), and an
operator revokes a token after confirming it in the page; the timeline (issue 28) drills from
a month down to a segment's entries as the REST API answers. Light data (no worker process):
the views' logic, not consolidation, is under test; `bench/dashboard_paint_tools.py` measures
first paint on the demo's data. Each view's first paint here is printed, not asserted.
Screenshots at 1280 and 390 px go to ``$BLACKBOARD_DASHBOARD_SHOTS`` when it is set."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import quote

import pytest

from tests.gateway.dashboard_support import Tokens
from tests.gateway.gateway_support import spawn_gateway
from tests.support_secure import Secure, reset_secure

pytestmark = [pytest.mark.timeout(300), pytest.mark.process]

SHOTS = os.environ.get("BLACKBOARD_DASHBOARD_SHOTS")
PAINT: dict[str, float] = {}

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@dataclass
class Env(Tokens):
    api_timeout: ClassVar[float] = 120


@pytest.fixture(scope="module")
def env(secure_redis: Secure, browser: Browser) -> Iterator[Env]:
    reset_secure(secure_redis)
    gw = spawn_gateway(secure_redis, chart_interval=1)
    try:
        e = Env(gw, gw.operator_token(), gw.token("agent1", ["ops"]), gw.token("agent2", ["ops"]))
        items = [{"value": {"text": f"step {i}: {'invoice' if i % 3 else 'deploy'} for "
                            f"customer {i % 7}"}, "tags": ["step", f"c{i % 7}"]}
                 for i in range(120)]
        e.api(e.a1, "POST", "/v1/memories/batch", json={"items": items})
        e.api(e.a2, "POST", "/v1/memories", json={"value": "agent2 keeps the quokka ledger"})
        for t in (e.a1, e.op):  # a token's first recall builds its index: not a paint
            e.api(t, "GET", "/v1/dashboard/search", params={"q": "warm up"})
        yield e
    finally:
        gw.stop()
        if PAINT:
            print("\ndashboard tools, first paint (navigation to data shown): "
                  + ", ".join(f"{k} {v:.0f} ms" for k, v in PAINT.items()))


@pytest.fixture()
def page(browser: Browser, env: Env) -> Iterator[Page]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
    pg = ctx.new_page()
    errors: list[str] = []
    outside: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: outside.append(r.url) if not r.url.startswith(env.gw.url) else None)
    yield pg
    ctx.close()
    assert not errors, errors
    assert not outside, f"requests outside the gateway: {outside[:5]}"


def login(page: Page, token: str) -> None:
    page.add_init_script(f"sessionStorage.setItem('bb-dashboard-token', {json.dumps(token)})")


def open_view(page: Page, env: Env, view: str, route: str | None = None) -> float:
    t0 = time.perf_counter()
    page.goto(f"{env.gw.url}/#/{route or view}")
    page.wait_for_selector(f"body[data-ready='{view}']", timeout=20_000)
    ms = (time.perf_counter() - t0) * 1000
    PAINT.setdefault(view, ms)
    return ms


def shots(page: Page, name: str) -> None:
    """Desktop and phone screenshots (when asked for), and the page must not scroll
    sideways on a phone."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)  # the charts redraw at the new width
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 392, f"{name} scrolls sideways on a phone ({width}px)"
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/{name}-390.png", full_page=True)
        page.set_viewport_size({"width": 1280, "height": 860})
        page.wait_for_timeout(300)
        page.screenshot(path=f"{SHOTS}/{name}-1280.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


# -- 1. the search box --------------------------------------------------------------------

def test_the_search_box_finds_across_scopes_and_leads_to_the_entry(page: Page, env: Env) -> None:
    def searched() -> dict:
        return env.api(env.a1, "GET", "/v1/dashboard/search", params={"q": "deploy customer 3"})

    # The page must rank as the API does: wait until the search's retriever has embedded
    # what it searches (before, its first pass ranks; the order changes as vectors arrive).
    deadline = time.monotonic() + 60
    while (api := searched())["dense_pending"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert api["hits"] and api["dense_pending"] == 0, api["dense_pending"]
    login(page, env.a1)
    open_view(page, env, "search", f"search?q={quote('invoice')}")
    assert page.locator("li.search-hit").count() > 0
    # A row above a higher score says why (a fact ranks by its best form; the newest
    # statement first), and only such a row does.
    rows = page.eval_on_selector_all("li.search-hit", "els => els.map(e => "
                                     "[Number(e.dataset.score), !!e.querySelector('.hit-moved')])")
    for i, (score, noted) in enumerate(rows):
        assert noted == any(s > score for s, _ in rows[i + 1:]), (i, rows)
    page.fill("#global-search", "deploy customer 3")
    page.press("#global-search", "Enter")
    page.wait_for_function("location.hash.includes('deploy')", timeout=10_000)
    # The view was already "search" (the invoice query): wait for this query's answer, not
    # for the ready flag, which stays set until the hash change reaches the router.
    page.wait_for_function(
        "(document.getElementById('search-summary') || {}).textContent"
        "?.includes('deploy customer 3')", timeout=20_000)
    page.wait_for_selector("body[data-ready='search']", timeout=20_000)
    ids = page.eval_on_selector_all("li.search-hit", "els => els.map(e => e.dataset.id)")
    assert ids == [h["id"] for h in api["hits"]]
    assert page.input_value("#global-search") == "deploy customer 3"
    assert "quokka" not in page.inner_text("main")  # agent2's entry: not agent1's to find
    shots(page, "search")
    first = api["hits"][0]
    page.click(f"li.search-hit[data-id='{first['id']}'] a.entry-link")
    page.wait_for_selector("#entry-id", timeout=20_000)
    assert page.inner_text("#entry-id") == first["id"]


# -- 2. entry lists: pages and a text filter ------------------------------------------------

def test_a_scopes_entries_page_and_filter(page: Page, env: Env) -> None:
    scope = "agent:agent1:working"
    login(page, env.a1)
    open_view(page, env, "entry", f"entry/{quote(scope, safe='')}")
    rows = "#entries-table tbody tr"
    assert page.locator(rows).count() == 50
    first_page = page.locator(f"{rows} a.entry-link").first.inner_text()
    assert page.is_disabled("#page-newer") and page.is_enabled("#page-older")
    page.click("#page-older")
    page.wait_for_function("document.getElementById('entries-summary').textContent"
                           ".includes('51\u2013100')", timeout=10_000)
    assert page.locator(rows).count() == 50
    page.click("#page-older")
    page.wait_for_function("document.getElementById('entries-summary').textContent"
                           ".includes('101\u2013')", timeout=10_000)
    assert page.is_disabled("#page-older")
    page.click("#page-newer")
    page.click("#page-newer")
    page.wait_for_function("document.getElementById('entries-summary').textContent"
                           ".includes('1\u201350')", timeout=10_000)
    assert page.locator(f"{rows} a.entry-link").first.inner_text() == first_page

    page.fill("input[name=filter]", "deploy")
    page.wait_for_function("location.hash.includes('q=deploy')", timeout=10_000)
    page.wait_for_function(f"document.querySelectorAll('{rows}').length === 40", timeout=10_000)
    texts = page.locator(f"{rows} a.entry-link").all_inner_texts()
    assert all("deploy" in t for t in texts)
    shots(page, "entries")
    page.fill("input[name=filter]", "no-such-word")
    page.wait_for_selector("#entries-table p.muted", timeout=10_000)


# -- 3. charts over time --------------------------------------------------------------------

def test_charts_draw_the_gateways_samples_and_an_agent_sees_its_own(page: Page,
                                                                     env: Env) -> None:
    login(page, env.op)
    open_view(page, env, "charts")
    page.wait_for_function("document.querySelectorAll('svg.timeseries path.series').length >= 6",
                           timeout=20_000)
    for chart in ("throughput", "lag", "memory", "dead-letters"):
        assert page.locator(f"[data-chart='{chart}'] svg.timeseries").count() == 1, chart
    shots(page, "charts-operator")

    page2 = page.context.new_page()
    login(page2, env.a2)
    open_view(page2, env, "charts")
    for chart in ("lag", "dead-letters"):
        assert page2.locator(f"[data-chart='{chart}'] .op-only").count() == 1
    page2.wait_for_selector("[data-chart='memory'] [data-series='entries']", timeout=10_000)
    last = page2.get_attribute("[data-chart='memory'] .legend [data-series='entries']",
                               "data-last")
    mine = env.api(env.a2, "GET", "/v1/dashboard/charts")["entries"][-1]
    assert last is not None and abs(int(last) - mine) <= 1 and mine < 50  # not agent1's 120
    shots(page2, "charts-agent")
    page2.close()


# -- 4. tokens ----------------------------------------------------------------------------

def test_an_operator_revokes_a_token_after_confirming(page: Page, env: Env) -> None:
    rec, victim = env.gw.token_record("agent3")
    login(page, env.op)
    open_view(page, env, "tokens")
    row = f"#token-table tr[data-id='{rec.id}']"
    assert page.locator(row).count() == 1
    assert rec.sha256 not in page.content()
    page.click(f"{row} button.revoke")
    page.click(f"{row} button.cancel-revoke")  # changed its mind: nothing happens
    assert page.locator(f"{row} button.revoke").count() == 1
    shots_row = page.locator(row)
    page.click(f"{row} button.revoke")
    assert "Revoke" in shots_row.inner_text()
    shots(page, "tokens-confirm")
    page.click(f"{row} button.confirm-revoke")
    page.wait_for_selector("#tokens-message.ok", timeout=10_000)
    page.wait_for_selector(row, state="detached", timeout=10_000)
    with env.gw.client(victim) as c:
        assert c.get("/v1/tags").status_code == 401
    shots(page, "tokens")

    page2 = page.context.new_page()
    login(page2, env.a1)
    open_view(page2, env, "map")
    assert page2.locator("nav a[data-view='tokens']").count() == 0
    open_view(page2, env, "tokens")
    assert "Operator token required" in page2.inner_text("main")
    page2.close()


# -- 5. the timeline (issue 28): drill from a month down to a segment's entries -------------

CHAT = [  # (when, speaker, text): three days, the first with two segments (a 5-hour gap)
    ("2023-04-14T09:00", "Caroline", "I signed up for a pottery class at the community centre."),
    ("2023-04-14T09:05", "Melanie", "Pottery is so calming, send me a photo of your first bowl."),
    ("2023-05-08T10:02", "Caroline", "I went to the LGBTQ support group yesterday, so powerful."),
    ("2023-05-08T10:06", "Melanie", "That sounds inspiring, what stories did people share?"),
    ("2023-05-08T10:11", "Caroline", "A transgender woman talked about her journey and family."),
    ("2023-05-08T15:30", "Melanie", "We are going camping at the lake with the kids this weekend."),
    ("2023-05-08T15:34", "Caroline", "Take marshmallows, the kids will love a campfire."),
    ("2023-05-20T19:00", "Melanie", "I painted a sunset over the lake after our camping trip."),
]


def _seed_timeline(env: Env) -> str:
    """agent1's conversation and one note of agent2's, each in its ltm:episodic scope, their
    tables of contents built as the timeline role keeps them; -> agent2's segment ref."""
    from blackboard import WriteRequest
    from consolidation.toc import rebuild
    from tests.gateway.gateway_support import run_async

    async def go() -> str:
        async with env.gw.admin() as bb:
            mine, theirs = "agent:agent1:ltm:episodic", "agent:agent2:ltm:episodic"
            await bb.scope(mine).write_many([WriteRequest(
                {"kind": "message", "speaker": who, "text": said, "at": f"{at}:00+00:00"},
                tags=[f"session:{at[:10]}"]) for at, who, said in CHAT])
            await bb.scope(theirs).write_many([WriteRequest(
                {"kind": "message", "speaker": "Omar", "text": "agent2's private plan",
                 "at": "2023-05-08T11:00:00+00:00"})])
            await rebuild(bb, mine)
            await rebuild(bb, theirs)
        return f"{theirs}#s2023-05-08.0"

    return str(run_async(go))


def _shown(page: Page, node_id: str) -> None:
    page.wait_for_selector(f"#tl-node[data-id='{node_id}']", timeout=20_000)


def test_the_timeline_drills_from_a_month_to_a_segments_entries(page: Page, env: Env) -> None:
    foreign = _seed_timeline(env)

    def rest(**params: object) -> dict:
        return env.api(env.a1, "GET", "/v1/timeline", params=params)

    login(page, env.a1)
    open_view(page, env, "timeline")
    assert int(page.get_attribute("#tl-node", "data-count") or 0) == rest(depth=0)["count"] == 8
    page.click("li.tl-child[data-id='y2023'] a.tl-open")
    _shown(page, "y2023")
    page.click("li.tl-child[data-id='m2023-05'] a.tl-open")
    _shown(page, "m2023-05")
    month = rest(at="2023-05")
    kids = page.eval_on_selector_all("li.tl-child", "els => els.map(e => [e.dataset.id, "
                                     "Number(e.dataset.count), e.querySelector('.tl-summary')"
                                     "?.textContent])")
    assert kids == [[c["id"], c["count"], c["summary"]] for c in month["nodes"]]
    assert page.inner_text("#tl-node .tl-summary") == month["summary"]
    assert "8 May 2023" in page.inner_text("#tl-node .tl-span")  # a date, not epoch ms
    assert "Caroline" in page.inner_text("#tl-node [data-facet='actors']")
    assert page.inner_text("#tl-crumbs") == "All time \u203a 2023 \u203a May 2023"
    shots(page, "timeline-month")
    page.click("li.tl-child[data-id='w2023-05-08'] a.tl-open")
    _shown(page, "w2023-05-08")
    page.click("li.tl-child[data-id='d2023-05-08'] a.tl-open")
    _shown(page, "d2023-05-08")
    day = rest(at="2023-05-08")
    refs = page.eval_on_selector_all("li.tl-child", "els => els.map(e => e.dataset.ref)")
    assert refs == [c["ref"] for c in day["nodes"]] and len(refs) == 2  # the gap cuts two
    page.click(f"li.tl-child[data-ref='{refs[0]}'] a.tl-open")
    _shown(page, refs[0].split("#")[1])
    grips = env.api(env.a1, "GET", "/v1/timeline/expand", params={"segment": refs[0]})
    rows = page.eval_on_selector_all("#tl-entries tbody tr", "els => els.map(e => e.dataset.id)")
    assert rows == [e["id"] for e in grips["entries"]] and len(rows) == 3
    first = grips["entries"][0]
    assert page.get_attribute(f"#tl-entries tr[data-id='{first['id']}'] a.entry-link", "href") \
        == f"#/entry/{quote(first['scope'], safe='')}/{first['id']}"
    assert page.inner_text("#tl-crumbs").endswith(
        "Mon 8 May 2023 \u203a 10:02\u201310:11 \u00b7 ltm:episodic")
    shots(page, "timeline")

    # an agent token: another agent's table and segment are refused, saying why
    page.goto(f"{env.gw.url}/#/timeline?agent=agent2")
    page.wait_for_function("document.querySelector('main p.error')?.textContent"
                           ".includes(\"may not read agent 'agent2'\")", timeout=20_000)
    page.goto(f"{env.gw.url}/#/timeline?segment={quote(foreign, safe='')}")
    page.wait_for_function("document.querySelector('main p.error')?.textContent"
                           ".includes(\"may not read scope 'agent:agent2:ltm:episodic'\")",
                           timeout=20_000)
    assert "private plan" not in page.inner_text("main")

    # an operator token picks the agent
    page2 = page.context.new_page()
    login(page2, env.op)
    open_view(page2, env, "timeline", "timeline?agent=agent1")
    assert {"agent1", "agent2"} <= set(page2.eval_on_selector_all(
        "#tl-agent option", "els => els.map(e => e.value)"))
    page2.select_option("#tl-agent select", "agent2")
    page2.wait_for_selector("#tl-node[data-count='1']", timeout=20_000)
    assert "agent=agent2" in page2.evaluate("location.hash")
    page2.close()
