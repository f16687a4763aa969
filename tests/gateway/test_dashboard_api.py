"""The dashboard's read APIs through a real gateway process, without a browser: operator
routes refuse agent tokens, re-drive is confirmed, puts the event back once and is audited,
provenance is found both ways, an agent reads nothing of another agent, and the page's
assets are served from the package with no external URL."""

from __future__ import annotations

import re

import pytest
from redis import exceptions as rexc

from blackboard import AccessDenied
from blackboard.keys import PartitionKeys
from memory import MemoryLevel
from tests.gateway.dashboard_support import dead_letter_one
from tests.gateway.gateway_support import GatewayProc, run_async


def _write(gw: GatewayProc, token: str, text: str, tags: list[str] | None = None) -> dict:
    with gw.client(token) as c:
        r = c.post("/v1/memories", json={"value": {"text": text}, "tags": tags or []})
    assert r.status_code == 201, r.text
    return dict(r.json())


def test_operator_routes_refuse_agent_tokens(gateway: GatewayProc) -> None:
    rec, a = gateway.token_record("a")
    with gateway.client(a) as c:
        for method, path, body in (("GET", "/v1/dashboard/workers", None),
                                   ("GET", "/v1/dashboard/dlq", None),
                                   ("GET", "/v1/dashboard/audit", None),
                                   ("POST", "/v1/dashboard/dlq/redrive",
                                    {"partition": 0, "id": "1-0", "confirm": True})):
            r = c.request(method, path, json=body)
            assert r.status_code == 403, (path, r.text)
            assert r.json()["error"] == "AccessDenied" and "operator" in r.json()["detail"]
        assert c.get("/v1/dashboard/me").json() == {
            "agent": "a", "teams": [], "operator": False, "token": rec.id,
            "levels": [lvl.value for lvl in MemoryLevel]}  # the page's one list of levels
    with gateway.client(gateway.operator_token()) as c:
        w = c.get("/v1/dashboard/workers")
        assert w.status_code == 200 and w.json()["progress"] == []  # no worker runs
        assert c.get("/v1/dashboard/dlq").json() == {"items": []}


def test_redrive_is_confirmed_puts_the_event_back_once_and_is_audited(
        gateway: GatewayProc) -> None:
    _write(gateway, gateway.token("a"), "a step that a worker fails on", ["poison"])

    async def setup() -> tuple[str, int]:
        async with gateway.admin() as bb:
            await bb.relays.relay_all()
            ev = await dead_letter_one(bb)
            for p in range(bb.partitions):
                if await bb.dead_letters.list(partition=p):
                    return ev, p
            raise AssertionError("nothing was dead-lettered")

    event_id, p = run_async(setup)
    op = gateway.operator_token("alice")
    with gateway.client(op) as c:
        item = c.get("/v1/dashboard/dlq").json()["items"][0]
        assert (item["event_id"], item["partition"]) == (event_id, p)
        assert item["reason"] == "handler failed: test poison" and item["group"] == "dashtest"
        body = {"partition": p, "id": item["id"]}
        r = c.post("/v1/dashboard/dlq/redrive", json=body | {"confirm": False})
        assert r.status_code == 422 and r.json()["field"] == "confirm"

        async def bus_len() -> int:
            async with gateway.admin() as bb:
                return int(await bb.client.xlen(PartitionKeys(p).bus))

        before = run_async(bus_len)
        r = c.post("/v1/dashboard/dlq/redrive", json=body | {"confirm": True})
        assert r.status_code == 200, r.text
        rec = r.json()
        assert rec["dlq_id"] == item["id"] and rec["by"].startswith("alice")
        assert run_async(bus_len) == before + 1
        assert c.get("/v1/dashboard/dlq").json()["items"] == []
        again = c.post("/v1/dashboard/dlq/redrive", json=body | {"confirm": True})
        assert again.status_code == 404 and again.json()["error"] == "NotFound"
        audit = c.get("/v1/dashboard/audit").json()["items"]
        assert [a["dlq_id"] for a in audit] == [item["id"]]

        async def redriven() -> dict[str, str]:
            async with gateway.admin() as bb:
                rows = await bb.client.xrange(PartitionKeys(p).bus, rec["bus_id"], rec["bus_id"])
                return {k.decode(): v.decode() for k, v in rows[0][1].items()}

        ev = run_async(redriven)
        assert (ev["scope"], ev["entry"]) == (item["scope"], item["entry"])
        assert ev["tags"] == '["poison"]'


def test_provenance_is_found_both_ways_for_an_agent(gateway: GatewayProc) -> None:
    a = gateway.token("a")
    raw = _write(gateway, a, "raw step")

    async def derive() -> str:
        async with gateway.admin() as bb:
            e = await bb.scope("agent:a:stm").write(
                {"text": "summary of the raw step"}, tags={"summary"}, source=(raw["id"],),
                metadata={"provenance": {"sources": [raw["id"]], "transformer": "summarize",
                                         "version": "1", "edge": "e1", "model": None}})
            return e.id

    did = run_async(derive)
    with gateway.client(a) as c:
        up = c.get(f"/v1/dashboard/entries/{raw['id']}", params={"scope": raw["scope"]}).json()
        assert up["sources"] == [] and [d["id"] for d in up["derived"]] == [did]
        assert up["derived"][0]["transformer"] == "summarize"
        down = c.get(f"/v1/dashboard/entries/{did}", params={"scope": "agent:a:stm"}).json()
        assert [(s["id"], s["raw"]) for s in down["sources"]] == [(raw["id"], True)]
        assert down["provenance"]["transformer"] == "summarize"
        assert down["strength_now"] <= 1.0 and len(down["curve"]) >= 2


def test_an_agent_reads_nothing_of_another_agent(gateway: GatewayProc) -> None:
    a, b = gateway.token("a"), gateway.token("b")
    e = _write(gateway, a, "a's secret")
    with gateway.client(b) as c:
        for r in (c.get(f"/v1/dashboard/entries/{e['id']}", params={"scope": e["scope"]}),
                  c.get(f"/v1/dashboard/scopes/{e['scope']}/entries"),
                  c.post("/v1/dashboard/recall", json={"query": "secret",
                                                       "scopes": [e["scope"]]})):
            assert r.status_code == 403, r.text
            assert r.json()["error"] == "AccessDenied"
        got = c.post("/v1/dashboard/recall", json={"query": "a's secret"}).json()
        assert all(not s.startswith("agent:a:") for s in got["scopes"]) and got["hits"] == []
        beliefs = c.get("/v1/dashboard/beliefs").text
        assert "agent:a:" not in beliefs


def test_the_page_and_its_assets_come_from_the_package(gateway: GatewayProc) -> None:
    with gateway.client() as c:
        page = c.get("/")
        assert page.status_code == 200 and "/ui/js/app.js" in page.text
        assets = ["/ui/app.css"] + [f"/ui/js/{m}.js" for m in (
            "app", "api", "dom", "live", "chart", "map", "events", "entry", "recall", "beliefs",
            "workers")]
        for path in assets:
            r = c.get(path)
            assert r.status_code == 200, path
            # No CDN, no font service: nothing the page loads names another origin.
            assert not re.search(r"https?://", r.text), path
        assert c.get("/v1/dashboard/me").status_code == 401


def test_redis_refuses_another_agents_entry_even_without_the_gateways_check(
        gateway: GatewayProc, monkeypatch: pytest.MonkeyPatch) -> None:
    """The access check in the dashboard code only makes the answer early and clear: with
    it removed, the read still runs as agent b's Redis user, and Redis refuses it."""
    from gateway.caller import Callers
    from gateway.dash import beliefs, entry, scopes
    from gateway.settings import GatewaySettings

    e = _write(gateway, gateway.token("a"), "a's secret")
    b = gateway.token("b")
    monkeypatch.setattr(entry, "check_read", lambda caller, scope: scope)
    monkeypatch.setattr(scopes, "check_read", lambda caller, scope: scope)
    monkeypatch.setattr(entry, "visible_scopes", _everything)
    monkeypatch.setattr(beliefs, "visible_scopes", _everything)

    async def attempt() -> list[BaseException | object]:
        callers = Callers(GatewaySettings.from_env(redis_url=gateway.redis.url))
        try:
            caller = await callers.resolve(b)
            out: list[BaseException | object] = []
            for coro in (entry.entry_detail(caller, e["scope"], e["id"]),
                         entry.scope_entries(caller, e["scope"], 10),
                         beliefs.beliefs(caller)):
                try:
                    out.append(await coro)
                except (AccessDenied, rexc.NoPermissionError) as exc:
                    out.append(exc)
            return out
        finally:
            await callers.aclose()

    got = run_async(attempt)
    for x in got:
        assert isinstance(x, AccessDenied | rexc.NoPermissionError), x
        assert "NOPERM" in str(x) or "permission" in str(x).lower(), x


async def _everything(caller: object) -> list[str]:
    return ["agent:a:working", "agent:a:stm", "agent:a:ltm:semantic", "agent:a:ltm:procedural"]


def test_recall_names_a_bad_level_for_agents_and_operators(gateway: GatewayProc) -> None:
    for token in (gateway.token("a"), gateway.operator_token()):
        with gateway.client(token) as c:
            r = c.post("/v1/dashboard/recall", json={"query": "x", "levels": ["nope"]})
        assert r.status_code == 422, r.text
        assert "unknown memory level 'nope'" in r.json()["detail"]


def test_recall_without_text_lists_by_filters_and_counts_no_exclusions(
        gateway: GatewayProc) -> None:
    a = gateway.token("a")
    e = _write(gateway, a, "tagged for the filter", ["keep"])
    _write(gateway, a, "not tagged")
    with gateway.client(a) as c:
        r = c.post("/v1/dashboard/recall", json={"tag_filter": {"all_of": ["keep"]}}).json()
    assert [h["entry"]["id"] for h in r["hits"]] == [e["id"]]
    assert r["candidates"] is None and not any(r["excluded"].values())


def test_a_dedupe_survivor_is_a_raw_step_merged_with_its_duplicates() -> None:
    """Dedupe adds the duplicates it deleted to the survivor's ``source``: the entry view
    lists them as merged copies, not as what the entry was derived from."""
    from blackboard import Entry
    from gateway.dash.entry import merged_of, sources_of

    e = Entry(id="keep", scope="agent:a1:working", value="Globex prefers email invoices.",
              source=("dup1", "dup2", "origin"), metadata={"merged_from": ["dup1", "dup2"]})
    assert sources_of(e) == ["origin"] and merged_of(e) == ["dup1", "dup2"]
    raw = Entry(id="k2", scope="agent:a1:working", value="x", source=("d",),
                metadata={"merged_from": ["d"]})
    assert sources_of(raw) == []
