"""REST (and RemoteMemory) ``/v1/beliefs/{id}/confirm|correct``: feedback written as
evidence by the token's agent; bad input refused with the field named, nothing written."""

from __future__ import annotations

from typing import Any

from memory.remote import RemoteMemory
from tests.gateway.gateway_support import GatewayProc, run_async

BELIEF = {"subject": "Acme Corp", "predicate": "lives_in", "object": "Springfield",
          "negated": False, "statement": "Acme Corp lives in Springfield",
          "canonical_key": "fact:acme-corp:lives_in", "evidence": []}


def _seed(gw: GatewayProc) -> dict[str, str]:
    """A belief of alice's, one of bob's, and a plain note of alice's (as the workers and
    alice would have written them)."""

    async def go() -> dict[str, str]:
        async with gw.admin() as bb:
            mine = await bb.scope("agent:alice:ltm:semantic").write(
                BELIEF, tags={"fact"}, key=BELIEF["canonical_key"])
            bobs = await bb.scope("agent:bob:ltm:semantic").write(
                BELIEF, tags={"fact"}, key=BELIEF["canonical_key"])
            note = await bb.scope("agent:alice:stm").write("a note", author="alice")
            return {"mine": mine.id, "bobs": bobs.id, "note": note.id}

    return run_async(go)  # type: ignore[no-any-return]


def _stm_count(gw: GatewayProc) -> int:
    async def go() -> int:
        async with gw.admin() as bb:
            return await bb.scope("agent:alice:stm").count()

    return run_async(go)  # type: ignore[no-any-return]


def test_confirm_and_correct_write_evidence_by_the_caller(gateway: GatewayProc) -> None:
    ids = _seed(gateway)
    tok = gateway.token("alice", ["t1"])
    with gateway.client(tok) as c:
        r = c.post(f"/v1/beliefs/{ids['mine']}/confirm")
        assert r.status_code == 201, r.text
        out = r.json()
        assert out["belief"] == ids["mine"] and out["belief_scope"] == "agent:alice:ltm:semantic"
        ev = out["evidence"]
        assert ev["scope"] == "agent:alice:stm" and ev["author"] == "alice"
        assert ev["metadata"]["feedback"] == "confirm" and ev["metadata"]["object"] == "Springfield"
        r = c.post(f"/v1/beliefs/{ids['mine']}/correct",
                   json={"claim": "Acme Corp lives in Shelbyville", "metadata": {}})
        assert r.status_code == 422 and r.json()["field"] == "metadata"  # unknown fields refused
        r = c.post(f"/v1/beliefs/{ids['mine']}/correct",
                   json={"claim": "Shelbyville", "scope": "agent:alice:ltm:semantic"})
        assert r.status_code == 201, r.text
        ev = r.json()["evidence"]
        assert ev["author"] == "alice" and ev["metadata"]["feedback"] == "correct"
        assert ev["metadata"]["object"] == "Shelbyville"
        # the belief itself is untouched: version 1, same claim
        got = c.get(f"/v1/memories/{ids['mine']}",
                    params={"scope": "agent:alice:ltm:semantic"}).json()
        assert got["version"] == 1 and got["value"]["object"] == "Springfield"


def _refused(c: Any, path: str, body: dict[str, Any] | None, status: int,
             field: str | None) -> None:
    r = c.post(path, json=body)
    assert r.status_code == status, r.text
    err = r.json()
    assert err["field"] == field and "Traceback" not in r.text, err


def test_bad_feedback_names_the_field_and_writes_nothing(gateway: GatewayProc) -> None:
    ids = _seed(gateway)
    tok = gateway.token("alice", ["t1"])
    before = _stm_count(gateway)
    with gateway.client(tok) as c:
        _refused(c, f"/v1/beliefs/{ids['note']}/correct", {"claim": "x"}, 422, "belief_id")
        _refused(c, f"/v1/beliefs/{ids['note']}/confirm", None, 422, "belief_id")
        _refused(c, f"/v1/beliefs/{ids['bobs']}/confirm",
                 {"scope": "agent:bob:ltm:semantic"}, 403, None)
        _refused(c, f"/v1/beliefs/{ids['bobs']}/confirm", None, 404, None)
        _refused(c, f"/v1/beliefs/{'0' * 26}/confirm", None, 404, None)
        _refused(c, f"/v1/beliefs/{ids['mine']}/correct", {"claim": "Globex lives in Paris"},
                 422, "claim")
        _refused(c, f"/v1/beliefs/{ids['mine']}/correct", {"claim": ""}, 422, "claim")
        _refused(c, f"/v1/beliefs/{ids['mine']}/correct", {}, 422, "claim")
        _refused(c, f"/v1/beliefs/{ids['mine']}/correct", {"claim": "x" * 1001}, 422, "claim")
    assert _stm_count(gateway) == before


def test_remote_memory_confirms_and_corrects(gateway: GatewayProc) -> None:
    ids = _seed(gateway)
    tok = gateway.token("alice", ["t1"])

    async def go() -> None:
        async with RemoteMemory(gateway.url, tok) as m:
            e = await m.confirm(ids["mine"])
            assert e.author == "alice" and e.metadata["feedback"] == "confirm"
            e = await m.correct(ids["mine"], "Shelbyville", scope="agent:alice:ltm:semantic")
            assert e.metadata["object"] == "Shelbyville"
            try:
                await m.correct(ids["note"], "Shelbyville")
            except Exception as exc:  # the library's own type, with the field
                assert type(exc).__name__ == "NotABelief"
                assert exc.status == 422 and exc.field == "belief_id"  # type: ignore[attr-defined]
            else:
                raise AssertionError("a correction of a note was accepted")

    run_async(go)


async def test_mcp_confirm_and_correct(gateway: GatewayProc) -> None:
    from tests.gateway.test_mcp import mcp_client, ok, refused

    ids = _seed(gateway)
    tok = gateway.token("alice", ["t1"])
    async with mcp_client(gateway, tok) as c:
        got = ok(await c.call_tool("confirm", {"belief_id": ids["mine"]}))
        assert got["belief"] == ids["mine"] and got["scope"] == "agent:alice:stm"
        got = ok(await c.call_tool("correct", {"belief_id": ids["mine"],
                                               "claim": "Acme Corp lives in Shelbyville"}))
        assert got["belief_scope"] == "agent:alice:ltm:semantic"
        assert "NotABelief: belief_id:" in refused(
            await c.call_tool("correct", {"belief_id": ids["note"], "claim": "x"}))
        assert "AccessDenied:" in refused(await c.call_tool(
            "confirm", {"belief_id": ids["bobs"], "scope": "agent:bob:ltm:semantic"}))
