"""Issue 23 item 2 over REST: Redis over its maxmemory answers a write with 507 and the
typed ``OutOfMemory`` (one line, nothing written), not a 500; the write goes through once
memory is freed."""

from __future__ import annotations

import redis


def test_a_write_over_maxmemory_is_507_out_of_memory(gateway):
    tok = gateway.token("alice")
    admin = redis.Redis.from_url(gateway.redis.admin_url)
    with gateway.client(tok) as c:
        assert c.post("/v1/memories", json={"value": "before"}).status_code == 201
        admin.config_set("maxmemory", 1)
        try:
            r = c.post("/v1/memories", json={"value": "over the limit"})
            batch = c.post("/v1/memories/batch", json={"items": [{"value": "a"}]})
        finally:
            admin.config_set("maxmemory", 0)
        for refused in (r, batch):
            assert refused.status_code == 507, refused.text
            body = refused.json()
            assert body["error"] == "OutOfMemory" and "maxmemory" in body["detail"]
        assert c.post("/v1/memories", json={"value": "after"}).status_code == 201
    admin.close()
