"""Fuzzed JSON bodies on every writing route: never a 500, always the error body, and the
store consistent afterwards (`blackboard check` finds no drift)."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.gateway_support import ROOT

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12)
FIELDS = ["value", "level", "team", "tags", "metadata", "key", "ttl_s", "importance",
          "scope", "expected_version", "items", "query", "tag_filter", "time_range",
          "scopes", "levels", "max_results", "lens", "fusion", "alpha", "mmr", "messages",
          "min_strength", "key_pattern", "explain"]
LEVELS = st.sampled_from(["working", "semantic", "ltm:episodic", "stm", "nope", ""])
TAGS = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["a", "b", "x:y"])),
                max_size=4)
store_like = st.fixed_dictionaries({"value": json_values}, optional={
    "level": st.one_of(LEVELS, json_values), "tags": st.one_of(TAGS, json_values),
    "metadata": json_values, "key": st.one_of(st.text(max_size=20), json_values),
    "ttl_s": st.one_of(st.floats(allow_nan=False, allow_infinity=False), json_values),
    "importance": st.one_of(st.floats(allow_nan=False, allow_infinity=False), json_values),
    "team": st.sampled_from(["t1", "t2", "", "t1:working"])})
bodies = st.one_of(
    store_like,
    st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=5),
    st.fixed_dictionaries({"items": st.lists(store_like, max_size=3)}),
    json_values,
)
ROUTES = [("POST", "/v1/memories"), ("POST", "/v1/memories/batch"), ("POST", "/v1/recall"),
          ("POST", "/v1/sessions/s1/messages"), ("PATCH", "/v1/memories/{id}")]


def test_fuzzed_bodies_never_500_and_leave_no_drift(gateway):
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        seed = c.post("/v1/memories", json={"value": "seed"}).json()

        @settings(max_examples=int(os.environ.get("GATEWAY_FUZZ_EXAMPLES", "150")),
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(route=st.sampled_from(ROUTES), body=bodies)
        def one(route: tuple[str, str], body: object) -> None:
            method, path = route
            r = c.request(method, path.format(id=seed["id"]), json=body)
            assert r.status_code < 500, (route, body, r.text)
            if r.status_code >= 400:
                assert set(r.json()) == {"error", "detail", "field"}, r.text
                assert "Traceback" not in r.text

        one()
        # raw bytes that are not JSON at all
        for raw in (b"\xff\xfe", b"[", b'{"value": "x"', b"null", b"1e999"):
            r = c.post("/v1/memories", content=raw,
                       headers={"content-type": "application/json"})
            assert r.status_code in (422, 400), (raw, r.text)
    env = {**os.environ, "BLACKBOARD_REDIS_URL": gateway.redis.admin_url,
           "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "cli", "check"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
