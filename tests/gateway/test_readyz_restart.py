"""``/readyz`` after the gateway's Redis restarts: it loads the scripts the restart emptied
and is 200 within 5 s of Redis being back (issue 23); a service user that may not load
them still gets the names of what is missing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import redis

from blackboard.server import RedisServer
from tests.gateway.gateway_support import ready_within, spawn_gateway
from tests.support_secure import Secure, secure_mode

pytestmark = pytest.mark.process  # its own redis-server and gateway



def test_readyz_is_200_within_5s_of_a_redis_restart(tmp_path: Path) -> None:
    srv = RedisServer(data_dir=tmp_path).start()
    gw = None
    try:
        secure = secure_mode(srv.url, (srv.port,))
        gw = spawn_gateway(secure)
        took, body = ready_within(gw.url, 10)
        assert took is not None, body
        port = srv.port
        srv.stop()  # SIGTERM: the AOF and the users survive, the script cache does not
        srv = RedisServer(port=port, data_dir=tmp_path).start()
        r = redis.Redis(port=port, username="default", password=secure.password)
        assert not any(r.script_exists("0" * 40))  # an empty script cache
        r.close()
        took, body = ready_within(gw.url, 5)
        assert took is not None, f"/readyz not 200 within 5 s of Redis being back: {body}"
    finally:
        if gw is not None:
            gw.stop()
        srv.stop()


def test_readyz_names_what_a_service_user_may_not_load(tmp_path: Path) -> None:
    with RedisServer(data_dir=tmp_path) as srv:
        secure = secure_mode(srv.url, (srv.port,))
        admin = secure.admin_clients()[0]
        admin.acl_setuser("noload", enabled=True, passwords=["+noload-pw"], keys=["*"],
                          channels=["*"], commands=["+@all", "-script|load"])
        gw = spawn_gateway(Secure(srv.url, secure.password, secure.ports), {
            "BLACKBOARD_GATEWAY_SERVICE_URL": srv.url.replace(
                "redis://", "redis://noload:noload-pw@", 1)})
        try:
            admin.script_flush()
            r = httpx.get(gw.url + "/readyz", timeout=10)
            assert r.status_code == 503, r.text
            assert "scripts not loaded" in r.json()["detail"] and "update" in r.text
        finally:
            gw.stop()
            admin.close()
