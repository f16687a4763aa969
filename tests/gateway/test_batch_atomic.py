"""A batch lands whole or not at all, whatever dies: ``kill -9`` of a real gateway in the
middle of a 1,000-item batch over three scopes in three partitions (uncapped levels:
nothing evicted) leaves 0 or 1,000 items, seen right after the kill and after a new
gateway started (issue 24, item 5)."""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import pytest

from tests.gateway.gateway_support import run_async

N = 1000
TRIES = int(os.environ.get("BATCH_KILL_TRIES", "5"))
SCOPES = ("agent:alice:stm", "agent:alice:ltm:episodic", "team:t1:stm")


def _items(tag: str) -> list[dict[str, object]]:
    levels = [("stm", None), ("ltm:episodic", None), ("stm", "t1")]
    out: list[dict[str, object]] = []
    for i in range(N):
        level, team = levels[i % 3]
        it: dict[str, object] = {"value": f"{tag} item {i} " + "x" * 200, "tags": [tag],
                                 "level": level}
        if team:
            it["team"] = team
        out.append(it)
    return out


def _visible(gw, tag: str) -> int:  # type: ignore[no-untyped-def]
    async def go() -> int:
        async with gw.admin() as bb:
            n = 0
            for s in SCOPES:
                n += (await bb.scope(s).tags()).get(tag, 0)
            return n
    return int(run_async(go))


def _post(url: str, token: str, body: dict[str, object], out: list[object]) -> None:
    try:
        r = httpx.post(url + "/v1/memories/batch", json=body, timeout=60,
                       headers={"Authorization": f"Bearer {token}"})
        out.append(r.status_code)
    except httpx.HTTPError as exc:
        out.append(type(exc).__name__)


@pytest.mark.process
def test_kill_9_mid_batch_leaves_none_or_all(gateway, start_gateway):
    tok = gateway.token("alice", ["t1"])
    async def partitions() -> set[int]:
        async with gateway.admin() as bb:
            return {bb.scope(s).partition for s in SCOPES}
    assert len(run_async(partitions)) >= 2  # the batch spans partitions
    gw = start_gateway()
    t0 = time.monotonic()
    r = httpx.post(gw.url + "/v1/memories/batch", json={"items": _items("calib")},
                   headers={"Authorization": f"Bearer {tok}"}, timeout=60)
    took = time.monotonic() - t0
    assert r.status_code == 201 and _visible(gw, "calib") == N
    seen: list[tuple[float, object, int, int]] = []
    for k in range(TRIES):
        tag = f"try{k}"
        # kill points spread over the request's duration, where the items go out
        delay = took * (0.3 + 0.65 * k / max(TRIES - 1, 1))
        got: list[object] = []
        th = threading.Thread(target=_post, args=(gw.url, tok, {"items": _items(tag)}, got))
        th.start()
        time.sleep(delay)
        os.kill(gw.proc.pid, signal.SIGKILL)
        gw.proc.wait(10)
        th.join(30)
        now = _visible(gw, tag)
        gw = start_gateway()
        after = _visible(gw, tag)
        seen.append((round(delay, 3), got[0] if got else None, now, after))
        assert now in (0, N) and after == now, seen
    print(f"batch of {N} in {took:.3f}s; kill -9 tries (delay s, reply, items, after restart): "
          f"{seen}")
