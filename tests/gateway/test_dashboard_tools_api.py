"""The dashboard's tools (issue 30 item 5) through a real gateway process, without a
browser: token list and revoke (operator only, confirmed, the Redis user's password really
gone), entry paging with a cursor and a text filter (422 naming a bad parameter), the
header's search, and the charts' series (an agent's only over what its Redis user reads)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from gateway.tokens import encode_token, parse_token
from tests.gateway.gateway_support import GatewayProc, run_async, spawn_gateway
from tests.support_secure import Secure, reset_secure


@pytest.fixture(scope="module")
def gateway_process(secure_redis: Secure) -> Iterator[GatewayProc]:
    # samples twice a second, so the charts have a series within the test
    reset_secure(secure_redis)
    gw = spawn_gateway(secure_redis, chart_interval=0.5)
    yield gw
    gw.stop()


def _get(gw: GatewayProc, token: str, path: str, **params: Any) -> Any:
    with gw.client(token) as c:
        return c.get(path, params=params)


def _field(r: Any, status: int = 422) -> str:
    assert r.status_code == status, r.text
    return str(r.json()["field"])


# -- tokens -------------------------------------------------------------------------------

def test_an_operator_lists_and_revokes_tokens_and_the_password_is_gone(
        gateway: GatewayProc) -> None:
    rec, a = gateway.token_record("a")
    _, a_other = gateway.token_record("a")
    op_rec, op = gateway.token_record("ops", (), operator=True)
    listed = _get(gateway, op, "/v1/dashboard/tokens")
    assert listed.status_code == 200, listed.text
    rows = {t["id"]: t for t in listed.json()["tokens"]}
    assert {rec.id, op_rec.id} <= set(rows)
    assert rows[op_rec.id]["current"] and not rows[rec.id]["current"]
    assert rows[rec.id]["user"] == "bb-agent-a" and not rows[rec.id]["operator"]
    for secret in (parse_token(a).password, parse_token(op).password, rec.sha256):
        assert secret not in listed.text  # no token, no password, no hash

    with gateway.client(a) as c:  # an agent may neither list nor revoke, even itself
        assert c.get("/v1/dashboard/tokens").status_code == 403
        r = c.post(f"/v1/dashboard/tokens/{rec.id}/revoke", json={"confirm": False})
        assert r.status_code == 403 and r.json()["error"] == "AccessDenied", r.text
    with gateway.client(op) as c:
        r = c.post(f"/v1/dashboard/tokens/{rec.id}/revoke", json={"confirm": False})
        assert _field(r) == "confirm"
        r = c.post("/v1/dashboard/tokens/no%20such/revoke", json={"confirm": True})
        assert _field(r) == "token_id"
        r = c.post("/v1/dashboard/tokens/feedfacecafe/revoke", json={"confirm": True})
        assert r.status_code == 404 and "token list" in r.json()["detail"], r.text
        r = c.post(f"/v1/dashboard/tokens/{rec.id}/revoke", json={"confirm": True})
        assert r.status_code == 200 and r.json()["revoked"], r.text
        left = [t["id"] for t in c.get("/v1/dashboard/tokens").json()["tokens"]]
        assert rec.id not in left
    # this process closed the token's pool: even a route that reads nothing refuses it
    assert _get(gateway, a, "/v1/dashboard/me").status_code == 401
    assert _get(gateway, a, "/v1/tags").status_code == 401
    assert _get(gateway, a_other, "/v1/tags").status_code == 200
    # Redis itself refuses the revoked password: not only the gateway
    claims = parse_token(a)
    direct = redis.Redis.from_url(gateway.redis.url)
    with pytest.raises(redis.AuthenticationError):
        direct.execute_command("AUTH", claims.user, claims.password)
    direct.close()


def test_revoke_needs_a_service_connection_that_may_change_users(
        gateway: GatewayProc) -> None:
    """A gateway whose service connection is the service user (no ACL SETUSER) answers
    503 naming the CLI, and changes nothing."""
    from blackboard import Blackboard
    from blackboard.acl import SERVICE_USER, AclAdmin
    from gateway.dash.tokens import revoke_for
    from gateway.refusals import BookkeepingUnavailable

    rec, a = gateway.token_record("a")

    class Op:
        operator, agent_id, token_id = True, "ops", "x"

    async def attempt() -> str:
        async with gateway.admin() as bb:
            grant = await AclAdmin(bb).grant_service(password="svc-test-pw-0123456789")
        async with Blackboard.connect(gateway.redis.url, partitions=8, username=SERVICE_USER,
                                      password=grant.password) as svc:
            with pytest.raises(BookkeepingUnavailable) as err:
                await revoke_for(Op(), svc, rec.id)  # type: ignore[arg-type]
            return str(err.value)

    msg = run_async(attempt)
    assert f"blackboard token revoke {rec.id}" in msg
    assert _get(gateway, a, "/v1/dashboard/me").status_code == 200


# -- entry paging -------------------------------------------------------------------------

def test_entries_page_by_cursor_and_filter_by_text(gateway: GatewayProc) -> None:
    a = gateway.token("a")
    items = [{"value": {"text": f"note {i} {'odd' if i % 2 else 'even'}"}, "tags": [f"n{i}"]}
             for i in range(25)]
    with gateway.client(a) as c:
        # one batch: many entries share a millisecond, so the cursor's tie-break is used
        assert c.post("/v1/memories/batch", json={"items": items}).status_code == 201
        extra = c.post("/v1/memories", json={"value": "the newest ODD one"}).json()
        scope = extra["scope"]
        path = f"/v1/dashboard/scopes/{scope}/entries"
        seen: list[str] = []
        cursor = None
        for _ in range(5):
            r = c.get(path, params={"limit": 10} | ({"cursor": cursor} if cursor else {}))
            assert r.status_code == 200, r.text
            d = r.json()
            seen += [e["id"] for e in d["entries"]]
            cursor = d["next"]
            if cursor is None:
                break
        assert len(seen) == 26 == len(set(seen)) and seen[0] == extra["id"]
        created = [e["created_at"] for e in c.get(path, params={"limit": 100}).json()["entries"]]
        assert created == sorted(created, reverse=True)

        d = c.get(path, params={"limit": 5, "q": "odd"}).json()
        assert d["entries"][0]["id"] == extra["id"] and len(d["entries"]) == 5
        d2 = c.get(path, params={"limit": 50, "q": "odd", "cursor": d["next"]}).json()
        odd = [str(e["value"]) for e in d["entries"] + d2["entries"]]
        assert len(odd) == 13 and d2["next"] is None
        assert all("odd" in t.lower() for t in odd)
        assert [e["id"] for e in c.get(path, params={"q": "n7"}).json()["entries"]]  # tags

        for params, field in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                              ({"cursor": "nope"}, "cursor"), ({"q": "x" * 201}, "q")):
            assert _field(c.get(path, params=params)) == field, params
    r = _get(gateway, gateway.token("b"), path)
    assert r.status_code == 403 and r.json()["error"] == "AccessDenied"


def test_a_filtered_page_looks_at_a_bounded_number_of_entries(
        gateway: GatewayProc, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rare word far down a scope: each page scans at most SCAN entries and says where
    it stopped; following ``next`` reaches it."""
    from gateway.caller import Callers
    from gateway.dash import paging
    from gateway.settings import GatewaySettings

    a = gateway.token("a")
    with gateway.client(a) as c:
        first = c.post("/v1/memories", json={"value": "the needle"}).json()
        c.post("/v1/memories/batch", json={"items": [{"value": f"hay {i}"} for i in range(12)]})
    monkeypatch.setattr(paging, "SCAN", 5)
    monkeypatch.setattr(paging, "STEP", 2)

    async def walk() -> list[tuple[int, int, bool]]:
        callers = Callers(GatewaySettings.from_env(redis_url=gateway.redis.url))
        try:
            caller = await callers.resolve(a)
            pages, cursor = [], None
            for _ in range(10):
                d = await paging.page(caller, first["scope"], 10, cursor, "needle")
                pages.append((d["scanned"], len(d["entries"]), d["next"] is None))
                cursor = d["next"]
                if cursor is None:
                    break
            return pages
        finally:
            await callers.aclose()

    pages = run_async(walk)
    assert all(scanned <= 5 for scanned, _, _ in pages)
    assert sum(n for _, n, _ in pages) == 1 and pages[-1][2]
    assert sum(s for s, _, _ in pages) == 13


# -- search -------------------------------------------------------------------------------

def test_search_finds_across_the_callers_scopes_only(gateway: GatewayProc) -> None:
    a, b = gateway.token("a", ["t"]), gateway.token("b")
    with gateway.client(a) as c:
        mine = c.post("/v1/memories", json={"value": "the quokka invoice is due"}).json()
        team = c.post("/v1/memories", json={"value": "team quokka notes", "team": "t"}).json()
    with gateway.client(b) as c:
        c.post("/v1/memories", json={"value": "b's own quokka secret"})
        r = c.get("/v1/dashboard/search", params={"q": "quokka"})
        assert r.status_code == 200, r.text
        assert all(h["scope"].startswith("agent:b:") for h in r.json()["hits"])
        assert r.json()["hits"]
        assert _field(c.get("/v1/dashboard/search")) == "q"
        assert _field(c.get("/v1/dashboard/search", params={"q": "x", "limit": 51})) == "limit"
        assert _field(c.get("/v1/dashboard/search", params={"q": "x" * 501})) == "q"
    d = _get(gateway, a, "/v1/dashboard/search", q="quokka").json()
    assert {mine["id"], team["id"]} <= {h["id"] for h in d["hits"]}
    hit = next(h for h in d["hits"] if h["id"] == mine["id"])
    assert hit["scope"] == mine["scope"] and "quokka" in hit["text"]
    # why a row may sit above a higher score: its other forms' scopes, the statement it
    # took the place of (none here: one form each, no update)
    assert hit["also_in"] == [] and hit["newer_than"] is None
    assert not [h for h in d["hits"] if h["scope"].startswith("agent:b:")]
    d = _get(gateway, gateway.operator_token(), "/v1/dashboard/search", q="quokka").json()
    assert {h["scope"].split(":")[1] for h in d["hits"]} >= {"a", "b"}


# -- charts -------------------------------------------------------------------------------

def _series(gw: GatewayProc, token: str, until: Any, timeout: float = 15) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = _get(gw, token, "/v1/dashboard/charts", minutes=5)
        assert r.status_code == 200, r.text
        d = r.json()
        if until(d) or time.monotonic() > deadline:
            return dict(d)
        time.sleep(0.25)


def test_charts_give_an_agent_only_its_own_series(gateway: GatewayProc) -> None:
    a, b = gateway.token("a", ["t"]), gateway.token("b")
    op = gateway.operator_token()
    with gateway.client(a) as c:
        c.post("/v1/memories/batch", json={"items": [{"value": f"a {i}"} for i in range(7)]})
    with gateway.client(b) as c:
        c.post("/v1/memories/batch", json={"items": [{"value": f"b {i}"} for i in range(3)]})
    d = _series(gateway, op, lambda d: len(d["t"]) >= 3 and d["entries"][-1] >= 10)
    assert d["entries"][-1] >= 10 and d["error"] is None, d
    for k in ("lag", "pending", "inbox", "dead_letters", "worker_events_per_s",
              "requests_per_s", "events_per_s"):
        assert len(d[k]) == len(d["t"]), k
    assert d["t"] == sorted(d["t"])
    mine = _series(gateway, b, lambda d: d["entries"] and d["entries"][-1] == 3)
    assert mine["entries"][-1] == 3, mine  # b's own 3, not a's 7
    assert "lag" not in mine and "dead_letters" not in mine and "lag" in mine["hidden"]
    # events/s: the writes show as a rate in some interval (b's 3 events)
    with gateway.client(b) as c:
        c.post("/v1/memories/batch", json={"items": [{"value": f"b2 {i}"} for i in range(4)]})
    mine = _series(gateway, b, lambda d: d["entries"][-1] == 7
                   and any(x for x in d["events_per_s"][-4:] if x))
    assert any(mine["events_per_s"][1:]), mine

    # c's token edited to claim a's team, used first (so its claims are the pool's):
    # the gateway's check passes, Redis refuses the count on c's connection
    forged = encode_token(replace(parse_token(gateway.token("c")), teams=("t",)))
    r = _get(gateway, forged, "/v1/dashboard/charts")
    assert r.status_code == 403 and "NOPERM" in r.json()["detail"], r.text
    for minutes in (0, 61, "x"):
        assert _field(_get(gateway, b, "/v1/dashboard/charts", minutes=minutes)) == "minutes"


def test_the_sampler_keeps_bounded_columns_and_counts_worker_restarts() -> None:
    from gateway.dash import charts

    s = charts.Sampler(10, lambda: 0.0)
    for i in range(charts.MAX_SCOPES + 50):
        s.column(f"agent:x{i}:working")
    assert len(s.columns) == charts.MAX_SCOPES and s.column("agent:late:working") is None

    class W:
        def __init__(self, wid: str, n: int, started: int) -> None:
            self.id, self.counters, self.started_at = wid, {"events": n}, started

    assert s._count_worker_events([W("w1", 500, 0)], 1000) == 0  # a baseline, not a burst
    assert s._count_worker_events([W("w1", 530, 0)], 2000) == 30
    assert s._count_worker_events([W("w1", 5, 1500)], 3000) == 35  # restarted: counts anew
    assert s._count_worker_events([W("w1", 9, 1500), W("w2", 4, 3500)], 4000) == 43


# -- timeline (issue 28) -----------------------------------------------------------------

def test_the_timeline_view_reads_an_agents_own_table_and_an_operator_picks(
        gateway: GatewayProc) -> None:
    from tests.gateway.test_rest_timeline import _build, _segments

    tina, op = gateway.token("tina", []), gateway.operator_token()
    gateway.token("omar", [])
    _build(gateway, "tina", ["The pump on line 3 failed.", "Replaced the pump seal."])
    _build(gateway, "omar", ["omar's private note"])
    rest = _get(gateway, tina, "/v1/timeline", depth=5).json()
    mine = _get(gateway, tina, "/v1/dashboard/timeline", depth=5)
    assert mine.status_code == 200, mine.text
    assert mine.json() == {"agent": "tina", "agents": ["tina"], "tree": rest, "missing": None}
    [ref] = _segments(rest)
    assert _get(gateway, tina, "/v1/dashboard/timeline/expand", segment=ref).json() == \
        _get(gateway, tina, "/v1/timeline/expand", segment=ref).json()
    # another agent's table or segment: 403 saying why, for an agent token
    other = _get(gateway, tina, "/v1/dashboard/timeline", agent="omar")
    assert _field(other, 403) == "agent" and "sees only its own" in other.json()["detail"]
    theirs = ref.replace("agent:tina:", "agent:omar:")
    r = _get(gateway, tina, "/v1/dashboard/timeline/expand", segment=theirs)
    assert r.status_code == 403 and "agent:omar:" in r.json()["detail"], r.text
    # an operator picks any agent; that agent's access rules still hold
    picked = _get(gateway, op, "/v1/dashboard/timeline", agent="omar", depth=0).json()
    assert {"tina", "omar"} <= set(picked["agents"]) and picked["tree"]["count"] == 1
    assert _get(gateway, op, "/v1/dashboard/timeline/expand", agent="omar",
                segment=theirs).json()["entries"][0]["value"] == "omar's private note"
    assert _get(gateway, op, "/v1/dashboard/timeline/expand", agent="omar",
                segment=ref).status_code == 403
    none = _get(gateway, tina, "/v1/dashboard/timeline", at="1999").json()
    assert none["tree"] is None and "y1999" in none["missing"]
    for params, field in (({"at": "2023-13"}, "at"), ({"depth": 9}, "depth"),
                          ({"agent": "a:b"}, "agent"), ({"at": "2023-02-30"}, "at")):
        assert _field(_get(gateway, op, "/v1/dashboard/timeline", **params)).endswith(field)
    assert _field(_get(gateway, tina, "/v1/dashboard/timeline/expand",
                       segment="x#d2023-01-01")).endswith("segment")


def test_the_tools_pages_come_from_the_package(gateway: GatewayProc) -> None:
    import re

    with gateway.client() as c:
        for m in ("search", "entries", "charts", "timeseries", "tokens", "timeline"):
            r = c.get(f"/ui/js/{m}.js")
            assert r.status_code == 200, m
            # nothing downloads at run time (the SVG namespace is a name, never fetched)
            body = r.text.replace("'http://www.w3.org/2000/svg'", "")
            assert not re.search(r"https?://", body), m


def test_the_readmes_dashboard_tools_block_runs_as_written(gateway: GatewayProc) -> None:
    """The README's block for these routes, run by bash with its port pointed at this
    gateway: every command answers 200 and the revoked token is refused afterwards."""
    import re
    import subprocess
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- snippet: tested-by tests/gateway/test_dashboard_tools_api.py -->\n"
                  r"```bash\n(.*?)```", text, re.S)
    assert m, "the README's dashboard tools block is gone"
    port = gateway.url.rsplit(":", 1)[1]
    script = re.sub(r"curl -s(X?) ", lambda c: "curl -sf -o /dev/null -w '%{http_code}\\n' "
                    + ("-X " if c.group(1) else ""),
                    m.group(1).replace("localhost:8080", f"127.0.0.1:{port}"))
    rec, token = gateway.token_record("a1")
    env = {"PATH": "/usr/bin:/bin", "TOKEN": token, "OPERATOR": gateway.operator_token(),
           "ID": rec.id}
    out = subprocess.run(["bash", "-ec", script], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["200"] * 5, out.stdout
    assert _get(gateway, token, "/v1/tags").status_code == 401
