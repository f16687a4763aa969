"""The dashboard's dataflow graph, event history, structured values and dark mode (issue 30
item 5) in headless Chromium against a real gateway process. The data is the demo's
hierarchy (two agents of one team, their edges installed) with entries written through
REST and no worker running. Lean on purpose (one module fixture, no consolidation): the heavy
demo-data run with its screenshots is ``tests/gateway/test_dashboard.py``."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from tests.gateway.dashboard_support import Tokens, install
from tests.gateway.gateway_support import GatewayProc, run_async

pytestmark = pytest.mark.timeout(300)


if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@dataclass
class Board(Tokens):
    def store(self, token: str, value: Any, tags: list[str], level: str = "working") -> Any:
        return self.api(token, "POST", "/v1/memories",
                        json={"value": value, "level": level, "tags": tags})


@pytest.fixture(scope="module")
def board(gateway_process: GatewayProc, browser: Browser) -> Board:
    from tests.support_secure import reset_secure

    gw = gateway_process
    reset_secure(gw.redis)

    async def seed() -> None:
        async with gw.admin() as bb:
            await install(bb)

    run_async(seed)
    return Board(gw, gw.operator_token(), gw.token("agent1", ["ops"]), gw.token("agent2", ["ops"]))


def open_page(browser: Browser, board: Board, token: str, route: str, view: str,
              width: int = 1280, **ctx_kw: Any) -> Page:
    ctx = browser.new_context(viewport={"width": width, "height": 860}, bypass_csp=True,
                              **ctx_kw)
    ctx.add_init_script(f"sessionStorage.setItem('bb-dashboard-token', {json.dumps(token)})")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.__dict__["errors"] = errors
    page.goto(f"{board.gw.url}/#/{route}")
    page.wait_for_selector(f"body[data-ready='{view}']", timeout=20_000)
    return page


def close(page: Page) -> None:
    errors = page.__dict__["errors"]
    page.context.close()
    assert not errors, errors


# -- the dataflow graph ---------------------------------------------------------------------

def test_dataflow_graph_draws_every_edge_with_pending_counts_live(browser: Browser,
                                                                  board: Board) -> None:
    page = open_page(browser, board, board.op, "flow", "flow")
    m = board.api(board.op, "GET", "/v1/map")
    pairs = {(e["source"], e["target"]) for e in m["edges"]}
    drawn = page.eval_on_selector_all(
        "#flow-graph path.flow-edge", "els => els.map(e => [e.dataset.source, e.dataset.target])")
    assert {tuple(x) for x in drawn} == pairs and len(drawn) == len(pairs)
    nodes = set(page.eval_on_selector_all("#flow-graph .flow-node",
                                          "els => els.map(e => e.dataset.scope)"))
    assert {s for p in pairs for s in p} <= nodes
    # layered: each edge runs left to right (sensory -> working -> stm -> ltm -> team ...)
    xs = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '#flow-graph .flow-node')].map(n => [n.dataset.scope, +n.querySelector('rect')
        .getAttribute('x')]))""")
    assert all(xs[s] < xs[t] for s, t in pairs)
    # the whole graph in view at desktop width, each table of contents drawn as the agent's
    # timeline in its own column (it was placed past the right edge, in no lane of its own)
    drawn_w, box_w = page.evaluate("""[+document.getElementById('flow-graph')
        .getAttribute('width'), document.getElementById('flow-box').clientWidth]""")
    assert drawn_w <= box_w, (drawn_w, box_w)
    tocs = [s for s in nodes if s.endswith(":toc")]
    assert tocs and all(page.text_content(
        f"#flow-graph .flow-node[data-scope='{s}'] .node-name") == "timeline" for s in tocs)
    assert all(page.get_attribute(f"#flow-graph .flow-node[data-scope='{s}']", "href")
               == f"#/timeline?agent={s.split(':')[1]}" for s in tocs)
    # the transformers are named on the drawing; the list says the same edges as text
    labels = " ".join(page.eval_on_selector_all("#flow-graph .edge-label",
                                                "els => els.map(e => e.textContent)"))
    for t in {e["transformer"] for e in m["edges"]}:
        assert t in labels, t
    assert page.locator("#flow-list tbody tr").count() == len(m["edges"])
    # no two labels overlap each other at desktop width
    boxes = page.eval_on_selector_all("#flow-graph .edge-label rect", """els => els.map(r =>
        [+r.getAttribute('x'), +r.getAttribute('y'), +r.getAttribute('width'),
         +r.getAttribute('height')])""")
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[0] + b[2] and b[0] < a[0] + a[2]
                        and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]), (a, b)

    # Each arrow carries its edges' pending count as the map has it (an operator's map
    # reads the buffers), summed over the edges between the same two scopes.
    want: dict[tuple[str, str], int] = {}
    for e in m["edges"]:
        want[(e["source"], e["target"])] = want.get((e["source"], e["target"]), 0) + e["pending"]
    got = page.eval_on_selector_all("#flow-graph path.flow-edge", """els => els.map(e =>
        [e.dataset.source, e.dataset.target, e.dataset.pending])""")
    assert {(x[0], x[1]): int(x[2]) for x in got} == want
    assert "pending in edge buffers" in page.inner_text("#flow-summary")

    # Live: a write to agent1's working memory shows in its node's count.
    node = "#flow-graph .flow-node[data-scope='agent:agent1:working'] .node-count"
    before = int(page.get_attribute(node, "data-count") or 0)
    board.store(board.a1, {"text": "dataflow check"}, ["flow"])
    page.wait_for_function(f"+document.querySelector(\"{node}\").dataset.count > {before}",
                           timeout=15_000)
    close(page)

    # An agent sees its own hierarchy and its team's, never another agent's scopes.
    page = open_page(browser, board, board.a2, "flow", "flow")
    seen = page.eval_on_selector_all("#flow-graph .flow-node",
                                     "els => els.map(e => e.dataset.scope)")
    assert seen and not [s for s in seen if s.startswith("agent:agent1")]
    assert any(s.startswith("agent:agent2:") for s in seen)
    close(page)

    # A phone: the drawing scrolls inside its box, the page does not; the list is open.
    page = open_page(browser, board, board.op, "flow", "flow", width=390, is_mobile=True,
                     has_touch=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 392
    assert page.evaluate("document.getElementById('flow-details').open")
    w = float(page.get_attribute("#flow-graph", "width") or 0)
    page.click("text=fit")
    assert float(page.get_attribute("#flow-graph", "width") or 0) < w
    close(page)


# -- the event history --------------------------------------------------------------------

def test_events_view_opens_with_history_and_shows_texts(browser: Browser, board: Board) -> None:
    word = f"history{uuid.uuid4().hex[:6]}"
    old = board.store(board.a1, {"text": f"the {word} entry written before the page opened"},
                      ["hist"])
    gone = board.store(board.a1, {"text": f"{word} soon deleted"}, ["hist"])
    board.api(board.a1, "DELETE", f"/v1/memories/{gone['id']}")
    ep = board.store(board.a1, EPISODE, ["episode"], level="episodic")
    api = board.api(board.a1, "GET", "/v1/dashboard/events/recent", params={"limit": 5})
    assert api["events"][1]["entry_id"] == gone["id"] and api["events"][1]["type"] == "deleted"
    written = next(e for e in api["events"] if e["entry_id"] == old["id"])
    assert written["text"] == f"the {word} entry written before the page opened"

    page = open_page(browser, board, board.a1, "events", "events")
    row = page.locator(f"#event-rows tr:has-text('{old['id']}')").first
    assert f"the {word} entry written before the page opened" in row.inner_text()
    assert "deleted" in page.locator(f"#event-rows tr:has-text('{gone['id']}')").first.inner_text()
    assert "earlier ones read from the feeds" in page.inner_text("p.summary")
    # a value of steps reads as its task and steps, not as JSON
    assert ("t-1: plan the task. → ran load_ledger: done. → ran write_report: done."
            in page.locator(f"#event-rows tr:has-text('{ep['id']}')").first.inner_text())
    # a live event gets its text too
    page.wait_for_selector("#live-status[data-state='live']", timeout=15_000)
    new = board.store(board.a1, {"text": f"{word} written live"}, ["hist"])
    page.wait_for_selector(f"#event-rows tr:has-text('{word} written live')", timeout=15_000)
    assert new["id"] in page.inner_text("#event-rows")
    # another agent's entries are neither in the history nor readable as texts
    with board.gw.client(board.a2) as c:
        r = c.post("/v1/dashboard/texts", json={"refs": [{"scope": old["scope"], "id": old["id"]}]})
        assert r.status_code == 403 and "agent:agent1" in r.json()["detail"]
        hist = c.get("/v1/dashboard/events/recent").json()["events"]
        assert not [e for e in hist if e["scope"].startswith("agent:agent1")]
        r = c.post("/v1/dashboard/texts", json={"refs": [{"scope": "x", "id": "y"}] * 201})
        assert r.status_code == 422
    close(page)


# -- structured values ----------------------------------------------------------------------

BELIEF = {"subject": "Acme", "predicate": "uses", "object": "net-30", "negated": False,
          "statement": "Acme uses net-30 payment terms", "status": "active",
          "confidence": 0.62, "revision": "new", "valid_from_ms": 1795742282296,
          "belief_kind": "world_fact",
          "confidence_components": {"source_count": 1, "agents": 1, "support_weight": 1.0,
                                    "contradiction_weight": 0.0},
          "evidence": [{"stance": "support", "text": "Acme Corp uses net-30 payment terms.",
                        "agent": "agent1", "at": 1795742282296, "weight": 1.0}]}
EPISODE = {"task": "t-1", "session": "s1", "title": None, "actors": ["agent1"],
           "start_ms": 1795742283047, "end_ms": 1795742283091, "outcome": "success",
           "steps": ["plan the task.", "ran load_ledger: done.", "ran write_report: done."]}
PROCEDURE = {"task_kind": "reconcile", "status": "learned", "name": None,
             "steps": ["load_ledger", "match_payments", "write_report"], "support": 4,
             "successes": 3, "failures": 1, "success_rate": 0.75, "procedure_version": 1,
             "variants": []}


def test_entry_view_renders_beliefs_episodes_and_procedures_for_people(
        browser: Browser, board: Board) -> None:
    b = board.store(board.a1, BELIEF, ["fact"], level="semantic")
    e = board.store(board.a1, EPISODE, ["episode"], level="episodic")
    p = board.store(board.a1, PROCEDURE, ["procedure"], level="procedural")
    page = open_page(browser, board, board.a1,
                     f"entry/{quote(b['scope'], safe='')}/{b['id']}", "entry")
    v = page.locator("#value-belief")
    assert v.locator(".statement").inner_text() == BELIEF["statement"]
    assert v.locator(".evidence li").count() == 1
    text = v.inner_text()
    assert "1 source from 1 agent;" in text  # not "1 agents"
    assert "believed since 2026-11-27 " in text and "1795742282296" not in text
    assert v.locator(".bar").count() == 1
    # raw JSON behind its toggle
    assert not page.is_visible("#entry-raw")
    page.click("#entry-value details.raw-toggle summary")
    assert json.loads(page.inner_text("#entry-raw")) == BELIEF
    # metadata: times as dates too; the decay curve is drawn
    assert page.evaluate("""() => { const c = document.getElementById('decay-curve');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }""") > 0

    page.goto(f"{board.gw.url}/#/entry/{quote(e['scope'], safe='')}/{e['id']}")
    page.wait_for_selector("#value-episode", timeout=15_000)
    assert page.locator("#value-episode .steps li").all_inner_texts() == EPISODE["steps"]
    ep = page.inner_text("#value-episode")
    assert "success" in ep and "(44 ms)" in ep and "1795742283047" not in ep

    page.goto(f"{board.gw.url}/#/entry/{quote(p['scope'], safe='')}/{p['id']}")
    page.wait_for_selector("#value-procedure", timeout=15_000)
    assert page.locator("#value-procedure .steps li").all_inner_texts() == PROCEDURE["steps"]
    assert "75% succeeded: 3 of 4 runs (1 failed)" in page.inner_text("#value-procedure")
    close(page)


# -- dark mode ------------------------------------------------------------------------------

def test_dark_mode_follows_the_system_and_the_toggle_is_remembered(browser: Browser,
                                                                  board: Board) -> None:
    page = open_page(browser, board, board.a1, "flow", "flow", color_scheme="dark")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate("localStorage.length") == 0  # nothing kept until someone chooses
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(17, 21, 28)", bg
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    page.reload()
    page.wait_for_selector("body[data-ready='flow']", timeout=15_000)
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(247, 248, 250)"
    assert page.inner_text("#theme-toggle") == "dark mode"
    close(page)
